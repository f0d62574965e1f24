import { createTask } from 'node-cron';
import { maskDeep, scrubText } from '../common/redact.js';
import type { Config } from '../config/config.js';
import type { Health } from './health.js';
import { identityOf, type StoreIdentity } from './identity.js';
import { exitCodeOf, judge } from './rules.js';
import {
  type HealthReads,
  type HealthSnapshot,
  type SnapshotWindow,
  unreadableSnapshot,
} from './snapshot.js';

export type { Health } from './health.js';
export type { Problem, Severity } from './rules.js';

const periodCache = new Map<string, number | null>();

/** The time between two runs of a cron schedule, ms; null when it is "off". */
export function schedulePeriodMs(expression: string): number | null {
  if (expression === 'off') return null;
  const cached = periodCache.get(expression);
  if (cached !== undefined) return cached;
  const task = createTask(expression, () => undefined);
  const [a, b] = task.getNextRuns(2);
  void task.destroy();
  const period = a && b ? b.getTime() - a.getTime() : null;
  periodCache.set(expression, period);
  return period;
}

/** The window the snapshot counts from, as of `now`. */
export function snapshotWindow(config: Config, now: number): SnapshotWindow {
  return {
    recentSince: new Date(now - 24 * 3_600_000).toISOString(),
    decisionCutoff: new Date(now - config.status.decision_warn_hours * 3_600_000).toISOString(),
    schemaSince: new Date(now - config.sync.schema.problem_hours * 3_600_000).toISOString(),
  };
}

/**
 * Reads the store's health through its {@link HealthReads} and judges it: the one health function
 * everything uses. `startedAt` is the daemon's start when the daemon itself asks; other processes
 * (`vcu-sync status`) leave it out and the running daemon's record in the database is used.
 */
export async function readHealth(
  reads: HealthReads,
  config: Config,
  now: number,
  startedAt?: string | null,
): Promise<Health> {
  let read: HealthSnapshot;
  try {
    read = await reads.snapshot(snapshotWindow(config, now), config.sync.page_size);
  } catch (err) {
    // A damaged or unreadable database is the moment status matters most: answer with the problem.
    read = unreadableSnapshot(reads.readFailed(err));
  }
  let started = startedAt ?? null;
  if (startedAt === undefined) started = await reads.daemonStartedAt().catch(() => null);
  return judgeHealth(read, config, reads.store, now, started);
}

/** The rules over a snapshot read from `store`: pure, the same for every store. */
export function judgeHealth(
  read: HealthSnapshot,
  config: Config,
  store: StoreIdentity,
  now: number,
  startedAt: string | null,
): Health {
  const schedule = config.sync.schedule;
  // Errors and reasons are the operator's words: a secret it echoed (in any encoding) is masked
  // here too, whatever wrote the row, before the CLI, the API, the page or the metrics see it.
  const snapshot = maskDeep(read, { text: scrubText }) as HealthSnapshot;
  const { status, problems } = judge(snapshot, {
    now,
    periods: {
      projects: schedulePeriodMs(schedule.projects),
      issuances: schedulePeriodMs(schedule.issuances),
      units: schedulePeriodMs(schedule.units),
      custody: schedulePeriodMs(schedule.custody),
    },
    stalePeriods: config.status.stale_periods,
    decisionWarnHours: config.status.decision_warn_hours,
    decisionWarnCount: config.status.decision_warn_count,
    subscriberFailingMinutes: config.subscriber_delivery.failing_warn_minutes,
    reconcileEnabled: config.reconcile.enabled,
  });
  return {
    status,
    exitCode: exitCodeOf(status),
    generatedAt: new Date(now).toISOString(),
    identity: identityOf(config, store, startedAt, now),
    problems,
    snapshot,
  };
}
