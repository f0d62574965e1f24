import { z } from 'zod';
import { PROBLEM_CODES, type ProblemCode } from '../../health/rules.js';
import type { Health } from '../../status.js';
import { instant } from './common.js';

/**
 * Health as GET /status answers it (status.ts Health, the same JSON as `vcu-sync status --json`),
 * as zod. The TypeScript types must fit it (checked at the end of this file); a field added to the
 * snapshot must be added here too, or test/api/openapi.test.ts finds it undocumented.
 */

const count = z.number().int();
const when = instant.nullable();

export const problemSchema = z
  .object({
    severity: z.enum(['warning', 'critical']),
    code: z
      .enum(PROBLEM_CODES as [ProblemCode, ...ProblemCode[]])
      .describe("stable; a heading of README's runbook (GET /runbook#<code>)"),
    message: z.string().describe('what is wrong, with the figures'),
    action: z.string().describe('what the on-call engineer should do'),
  })
  .meta({ id: 'Problem' });

const identity = z.object({
  version: z.string(),
  instance: z.string(),
  operatorHost: z.string().nullable(),
  database: z.object({ kind: z.enum(['sqlite', 'postgres']), location: z.string() }),
  startedAt: when,
  uptimeSeconds: count.nullable(),
  node: z.string(),
});

const resourceFacts = z.object({
  resource: z.string(),
  lastSuccessAt: when,
  lastRun: z
    .object({
      id: count,
      status: z.string().describe('running, succeeded, failed or interrupted'),
      startedAt: instant,
      finishedAt: when,
      error: z.string().nullable(),
      fetched: count,
      inserted: count,
      updated: count,
      removed: count,
      quarantined: count,
    })
    .nullable(),
  records: count,
  effectivePageSize: count.nullable(),
});

const byName = z.record(z.string(), count);

const snapshot = z.object({
  resources: z.array(resourceFacts),
  outbox: z.object({
    byState: byName,
    oldestQueuedAt: when,
    paused: z.object({ reason: z.string(), since: instant }).nullable(),
    awaitingDecision: count,
    oldestAwaitingAt: when,
    oldestAcceptedAt: when,
    finishedSince: byName,
    recentFailures: z.array(
      z.object({ ref: z.string(), operationType: z.string(), error: z.string().nullable(), at: instant }),
    ),
  }),
  rejections: z.object({
    since: count,
    recent: z.array(
      z.object({ ref: z.string(), operationType: z.string(), reason: z.string().nullable(), at: instant }),
    ),
  }),
  quarantine: byName,
  webhooks: z.object({
    received: count,
    verificationFailures: count,
    lastFailureReason: z.string().nullable(),
    conflicts: count,
    pendingOlderThanCutoff: count,
    lastReceivedAt: when,
    idReused: count,
    undecided: count,
    lastUndecided: z.object({ type: z.string().nullable(), status: z.string().nullable() }).nullable(),
  }),
  database: z.object({
    writeFailure: z
      .object({ code: z.string(), message: z.string(), since: instant, lastAt: instant, failures: count })
      .nullable(),
    lockedSince: when,
    corruption: z
      .object({ detail: z.string(), at: instant, source: z.enum(['integrity-check', 'query']) })
      .nullable(),
    readError: z.string().nullable(),
    unreachable: z.object({ reason: z.string(), since: instant.nullable() }).nullable().optional(),
  }),
  subscribers: z
    .array(
      z.object({
        subscriber: z.string(),
        pending: count,
        dead: count,
        delivered: count,
        oldestPendingAt: when,
        lastError: z.string().nullable(),
      }),
    )
    .optional()
    .describe('deliveries to [[subscribers]], per subscriber'),
  replicas: z
    .array(
      z.object({
        owner: z.string().describe('lease owner, unique per process'),
        name: z.string().describe('instance name'),
        runs: z.string().describe('what it runs, comma-separated (outbox, mirror, ...)'),
        startedAt: instant,
        lastHeartbeatAt: instant,
        alive: z.boolean().describe('its liveness lock is held: its session is up'),
        claimed: count.describe('outbox rows it has claimed (sending under its lease)'),
        claimedDeliveries: count.describe('subscriber deliveries it has claimed (sending under its lease)'),
        oldestClaimAt: when,
      }),
    )
    .optional()
    .describe('PostgreSQL only: the replicas sharing the database'),
  runningSyncs: z
    .array(
      z.object({
        id: count,
        resource: z.string(),
        startedAt: instant,
        pid: count.nullable().describe('process that started it'),
        lockHeld: z
          .boolean()
          .describe("its resource's run lock is held; free: the replica running it is gone"),
      }),
    )
    .optional()
    .describe('PostgreSQL only: sync runs marked running'),
});

/** GET /status: ok or warning (200), critical (503, same body). */
export const healthSchema = z
  .object({
    status: z.enum(['ok', 'warning', 'critical']),
    exitCode: z.number().int().min(0).max(2).describe('Nagios: 0 ok, 1 warning, 2 critical'),
    generatedAt: instant,
    identity,
    problems: z.array(problemSchema),
    snapshot: snapshot.describe('every figure the problems were judged on'),
    operatorRate: z
      .object({
        current: z.number().describe('requests/s now: halved by a 429, climbing back on successes'),
        ceiling: z.number().describe('operator.rate_per_second'),
      })
      .optional()
      .describe("the daemon's adaptive request rate to the operator; absent before its first request"),
  })
  .meta({ id: 'Health' });

// What getHealth returns must fit the schema: a documented field renamed or retyped fails the typecheck.
type Fits<Value extends Schema, Schema> = Value;
export type CheckedHealth = Fits<Health, z.output<typeof healthSchema>>;
