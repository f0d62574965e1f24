import { z } from 'zod';
import { identitySchema } from './identity.js';
import { problemSchema } from './problems.js';
import { snapshotSchema } from './snapshot.js';

/**
 * Health as `vcu-sync status --json` and `GET /status` show it (status.ts judges it), declared once
 * as the zod schema the API documents; the type is read from it. Here so that health/'s own
 * formatters read it without importing status.ts.
 */
export const healthSchema = z
  .object({
    status: z.enum(['ok', 'warning', 'critical']),
    exitCode: z.number().int().min(0).max(2).describe('Nagios: 0 ok, 1 warning, 2 critical'),
    generatedAt: z.string().meta({ format: 'date-time' }),
    identity: identitySchema.describe(
      'which vcu-sync this is: version, instance, operator, database, uptime',
    ),
    problems: z.array(problemSchema),
    snapshot: snapshotSchema.describe('every figure the problems were judged on'),
    operatorRate: z
      .object({
        current: z.number().describe('requests/s now: halved by a 429, climbing back on successes'),
        ceiling: z.number().describe('operator.rate_per_second'),
      })
      .optional()
      .describe("the daemon's adaptive request rate to the operator; absent before its first request"),
  })
  .meta({ id: 'Health' });

export type Health = z.output<typeof healthSchema>;
