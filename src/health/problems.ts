import { z } from 'zod';

/**
 * The vocabulary of the health rules (rules.ts, databaseRules.ts): the severities, every problem
 * code, a problem, and the inputs besides the snapshot. Apart from the rules so that the rules'
 * files import it, not each other.
 */

export type Severity = 'ok' | 'warning' | 'critical';

/**
 * Every problem code the rules can raise, once, with the severities it can have. Each is a heading
 * of README's runbook, an alert in config/vcu-sync.alerts.yml per severity and a `code` label of
 * `vcu_sync_problem`; a test checks all three.
 */
export const PROBLEM_SEVERITIES = {
  'no-database': ['critical'],
  'operator-auth': ['critical'],
  'sync-failed': ['warning'],
  'sync-never': ['warning'],
  'sync-stale': ['warning'],
  'sending-paused': ['critical'],
  'operations-failed': ['warning'],
  'queue-old': ['warning', 'critical'],
  'decision-overdue': ['warning'],
  'operations-rejected': ['warning'],
  'decision-conflict': ['critical'],
  'webhook-verification-failed': ['warning'],
  'webhook-unmatched': ['warning'],
  'webhook-undecided': ['warning'],
  'webhook-id-reused': ['warning'],
  'records-quarantined': ['warning'],
  'upstream-schema-changed': ['warning', 'critical'],
  'ledger-mismatch': ['warning', 'critical'],
  'database-corrupt': ['critical'],
  'database-write-failed': ['critical'],
  'database-unreadable': ['critical'],
  'database-locked': ['warning'],
  'database-unreachable': ['critical'],
  'subscriber-dead-letter': ['warning'],
  'subscriber-failing': ['warning'],
  'replica-dead': ['warning'],
} as const satisfies Record<string, ReadonlyArray<'warning' | 'critical'>>;
export type ProblemCode = keyof typeof PROBLEM_SEVERITIES;
export const PROBLEM_CODES = Object.keys(PROBLEM_SEVERITIES) as ProblemCode[];

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

export type Problem = z.output<typeof problemSchema>;

/** Inputs besides the snapshot. */
export interface RuleInputs {
  now: number;
  /** Expected period between runs, ms, per resource (from the cron schedule); null when the schedule is off. */
  periods: Record<string, number | null>;
  /** How many periods without success make a resource stale. */
  stalePeriods: number;
  /** An accepted operation undecided this long is flagged, hours. */
  decisionWarnHours: number;
  /** More accepted operations than this waiting for a decision is flagged. */
  decisionWarnCount: number;
  /** A subscriber whose oldest undelivered event is older than this is flagged, minutes (default: 15). */
  subscriberFailingMinutes?: number;
  /** A replica whose heartbeat is older than this is flagged, ms (default: REPLICA_STALE_MS). */
  replicaStaleMs?: number;
  /** `reconcile.enabled`: off, the findings recorded before are not current and raise nothing (default: true). */
  reconcileEnabled?: boolean;
}
