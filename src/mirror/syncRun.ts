import { isoAt } from '../common/clock.js';
import { errorMessage } from '../common/errors.js';
import type { SyncTarget, SyncTrigger } from '../common/syncRequests.js';
import type { AppContext } from '../context.js';
import { OperatorError } from '../operator/operatorErrors.js';
import { run } from '../store/script.js';
import { liveRows, type MirrorBackend, type RunLease, readCheckpoint, startRun } from './backend.js';
import { emptyCounts, type RunCounts } from './bookkeeping.js';
import { syncCustody } from './custody.js';
import { prepareFilterIndexes } from './filterIndexes.js';
import { listResources } from './resources.js';
import { RunGuard, runBounds } from './runGuard.js';
import { planScan } from './scan/cursor.js';
import { syncList } from './scan/driver.js';
import { shapePolicy } from './shape/policy.js';
import { logSchemaChanges } from './shape/shapeLog.js';
import { ShapeFailure } from './shape/tracker.js';
import * as statements from './statements.js';
import { RunAborted } from './syncErrors.js';

/** Options of one sync run. */
export interface RunSyncOptions {
  /** What started it (default: "manual"). */
  trigger?: SyncTrigger;
  /** Units: a full scan instead of the incremental pass (default: false). */
  full?: boolean;
  /** How retries wait; tests inject one that returns at once (default: setTimeout). */
  sleep?: (ms: number) => Promise<void>;
  /** Stops the run between pages; it ends `interrupted` with its checkpoint kept (default: none). */
  signal?: AbortSignal;
  /** Called after each committed batch (default: none). */
  onProgress?: (counts: RunCounts) => void;
  /** Where the run reads and writes (the store's factory makes it). */
  backend: MirrorBackend;
}

/** How a run ended. */
export interface RunOutcome {
  target: SyncTarget;
  runId: number | null;
  status: 'succeeded' | 'failed' | 'interrupted';
  mode: 'full' | 'incremental';
  counts: RunCounts;
  error: string | null;
  durationMs: number;
}

/** The outcome of a request that never became a run (refused, or lost with its thread) (pure). */
export function outcomeWithoutRun(
  target: SyncTarget,
  status: 'failed' | 'interrupted',
  error: string,
): RunOutcome {
  return { target, runId: null, status, mode: 'full', counts: emptyCounts(), error, durationMs: 0 };
}

/**
 * One sync run of one target, recorded in `sync_runs` from start to end. Never throws for what the
 * operator or the data did: the outcome says it (failed with the error, interrupted when stopped).
 */
export async function runSync(
  ctx: AppContext,
  target: SyncTarget,
  options: RunSyncOptions,
): Promise<RunOutcome> {
  const { backend } = options;
  const acquired = await backend.lock.acquire(ctx, target);
  if (!acquired.ok) {
    ctx.log.warn({ event: 'sync.run.skipped', resource: target, ...acquired.fields }, acquired.error);
    return outcomeWithoutRun(target, 'failed', acquired.error);
  }
  let held: { outcome: RunOutcome; locked: boolean };
  try {
    held = await runHeld(ctx, target, options, backend, acquired.lease);
  } finally {
    await acquired.lease.release();
  }
  if (held.locked && !options.signal?.aborted) {
    // Another process held the lock past the short wait: not the operator's fault nor the data's.
    // The next run resumes from the checkpoint, once the lock is free (its start waits for it).
    ctx.log.warn(
      { event: 'sync.run.lock_retry', resource: target, runId: held.outcome.runId },
      `sync of ${target} resumes once the database lock is free`,
    );
    return runSync(ctx, target, options);
  }
  return held.outcome;
}

/** The run itself, its lease held. */
async function runHeld(
  ctx: AppContext,
  target: SyncTarget,
  options: RunSyncOptions,
  backend: MirrorBackend,
  lease: RunLease,
): Promise<{ outcome: RunOutcome; locked: boolean }> {
  const started = ctx.clock.now();
  const counts = emptyCounts();
  const trigger = options.trigger ?? 'manual';
  // The run stops when asked to, and when it loses its right to run (PostgreSQL's lock connection).
  const stop =
    lease.lost && options.signal
      ? AbortSignal.any([options.signal, lease.lost])
      : (lease.lost ?? options.signal);
  const list = target === 'custody' ? undefined : listResources(ctx.config)[target];
  const plan = list
    ? planScan(
        await readCheckpoint(backend.db, list.name),
        list.log,
        options.full ?? false,
        ctx.config.sync.units_overlap,
      )
    : undefined;
  let mode: 'full' | 'incremental' = plan?.mode ?? 'full';
  const runId = await startRun(backend.db, target, mode, trigger, isoAt(started), plan?.resumedFrom ?? null);
  lease.started?.(runId);
  ctx.log.info(
    {
      event: 'sync.run.started',
      resource: target,
      runId,
      mode,
      trigger,
      resumedFrom: plan?.resumedFrom ?? null,
    },
    `sync of ${target} started`,
  );

  let status: RunOutcome['status'] = 'succeeded';
  let error: string | null = null;
  let locked = false;
  // Bounds: idle and overall time, and (for lists) records fetched against the mirror's size.
  const live = list ? await liveRows(backend.db, list) : null;
  // A first full load builds the filter indexes at its end; any run puts back what a killed one left.
  const deferred = list ? await prepareFilterIndexes(ctx, backend.db, list, mode, lease.fence) : null;
  const guard = new RunGuard(runBounds(ctx.config, live), live, stop);
  const bounded = {
    sleep: guard.sleeper(options.sleep),
    signal: guard.signal,
    onProgress: (progress: RunCounts) => {
      guard.progress(progress);
      options.onProgress?.(progress);
    },
    // The cap is also checked as each batch is read: held batches commit in groups (up to 10,000
    // records), and what passes the cap is never to be committed.
    onFetched: (fetched: RunCounts) => guard.progress(fetched),
  };
  try {
    if (list && plan) {
      const result = await syncList(ctx, list, {
        runId,
        plan,
        counts,
        ...bounded,
        store: backend.store(
          list,
          () => isoAt(ctx.clock.now()),
          lease,
          shapePolicy(ctx.config.sync.schema, list.table),
        ),
        onModeChange: async (next) => {
          mode = next;
          await backend.db.write(run(statements.setRunMode(runId, next)));
        },
      });
      if (result.refusal) {
        status = 'failed';
        error = result.refusal;
      }
    } else {
      await syncCustody(ctx, {
        runId,
        counts,
        ...bounded,
        db: backend.db,
        store: (def) =>
          backend.store(
            def,
            () => isoAt(ctx.clock.now()),
            lease,
            shapePolicy(ctx.config.sync.schema, def.table),
          ),
      });
    }
  } catch (err) {
    // The policy stopped the run: the changes it recorded on the way are told first.
    if (err instanceof ShapeFailure) logSchemaChanges(ctx.log, err.changes);
    // A stop also cancels the request in flight, which then fails with a network error; so does a
    // bound, which fails the run with its own message; so does a lost run lock.
    status =
      guard.failure === null && (err instanceof RunAborted || stop?.aborted) ? 'interrupted' : 'failed';
    error =
      guard.failure !== null
        ? `${target}: ${guard.failure}`
        : describeFailure(target, lease.lost?.aborted ? lease.lost.reason : err);
    locked = backend.lock.lockFailure(err);
  } finally {
    guard.close();
  }
  // Built whatever the outcome, so reads go by them until the next run: only while the run's right
  // is held (once lost, whoever holds it next puts them back at its start).
  if (deferred && !lease.lost?.aborted) {
    try {
      await deferred.build();
    } catch (err) {
      if (status === 'succeeded') {
        status = 'failed';
        error = `${target}: filter indexes not built: ${errorMessage(err)}`;
      }
    }
  }

  const finished = ctx.clock.now();
  await backend.db.write(run(statements.finishRun(runId, isoAt(finished), status, error, counts)));
  record(ctx, target, status, counts, started, finished);
  if (status === 'succeeded') backend.lock.afterSuccess(ctx);
  const fields = { event: 'sync.run.finished', resource: target, runId, mode, status, ...counts, error };
  if (status === 'succeeded') ctx.log.info(fields, `sync of ${target} ${status}`);
  else ctx.log.error(fields, `sync of ${target} ${status}: ${error}`);
  return { outcome: { target, runId, status, mode, counts, error, durationMs: finished - started }, locked };
}

/** One line naming what went wrong; operator errors say what kind, with the operator's words. */
function describeFailure(target: SyncTarget, err: unknown): string {
  if (err instanceof OperatorError) {
    const what =
      err.kind === 'auth'
        ? err.keyNotSent
          ? 'the operator wants an API key'
          : 'the operator refused the API key'
        : err.kind === 'invalid-response'
          ? 'the operator answered something unreadable'
          : err.kind === 'permanent'
            ? 'the operator refused the request'
            : 'the operator kept failing';
    return `${target}: ${what}: ${err.message}`;
  }
  return `${target}: ${errorMessage(err)}`;
}

function record(
  ctx: AppContext,
  target: SyncTarget,
  status: string,
  counts: RunCounts,
  started: number,
  finished: number,
): void {
  const m = ctx.metrics;
  m.syncRuns.inc({ resource: target, status });
  m.syncDuration.observe({ resource: target }, (finished - started) / 1000);
  for (const outcome of ['inserted', 'updated', 'unchanged', 'removed', 'quarantined'] as const) {
    if (counts[outcome] > 0) m.syncRecords.inc({ resource: target, outcome }, counts[outcome]);
  }
  if (status === 'succeeded') m.lastSyncSuccess.set({ resource: target }, finished / 1000);
}
