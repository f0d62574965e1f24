import type { Identity } from './identity.js';
import type { Problem, Severity } from './problems.js';
import type { HealthSnapshot } from './snapshot.js';

/** What status.ts returns; here so that health/'s own formatters read it without importing status.ts. */

/** Health as `vcu-sync status --json` and `GET /status` show it. */
export interface Health {
  status: Severity;
  /** Nagios exit code: 0 ok, 1 warning, 2 critical. */
  exitCode: number;
  generatedAt: string;
  /** Which vcu-sync this is: version, instance, operator, database, uptime. */
  identity: Identity;
  problems: Problem[];
  snapshot: HealthSnapshot;
  /**
   * The daemon's adaptive request rate to the operator and its ceiling (requests/s): in-memory state,
   * so only `GET /status` of a daemon that has called the operator shows it.
   */
  operatorRate?: { current: number; ceiling: number };
}
