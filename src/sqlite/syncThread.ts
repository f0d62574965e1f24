/**
 * The mirror's sync runs in a worker thread (app/syncWorker.ts) with its own database connection. Why:
 * while a full sync wrote pages on the daemon's loop, an enqueue waited behind each page's parsing,
 * validation, hashing and writes (25-75 ms a page, more with held commits): p99 625 ms against a
 * target of 5. In its thread the sync's CPU leaves the API's loop, and its bulk writes give way to
 * the API's commits at the writer gate (./writerGate.ts), so an enqueue waits for the lock about a
 * millisecond, not a held commit.
 *
 * The schedules, the requests of the API, the webhooks and the dispatcher stay in the main thread
 * (mirror/scheduler.ts); this is only where runs happen. One run per target at a time still holds: every
 * request goes to the one coordinator in the worker.
 */

import { errorMessage } from '../common/errors.js';
import type { SyncTarget, SyncTrigger } from '../common/syncRequests.js';
import type { AppContext } from '../context.js';
import type { FeedMessage } from '../db/changeSignal.js';
import { SyncCoordinator, type SyncRunner } from '../mirror/coordinator.js';
import type { SchemaChangeSink } from '../mirror/shape/tracker.js';
import { outcomeWithoutRun, type RunOutcome } from '../mirror/syncRun.js';
import { hostThread } from '../thread/host.js';
import { changeSignalFor } from './changes.js';
import { markInterruptedRuns, sqliteBackend } from './mirror.js';
import type { Sqlite } from './open.js';
import { sqliteHostedStore } from './threadStore.js';

/** Main thread → mirror worker: run (or join a coming run of) one target. */
export type SyncIn = { type: 'request'; id: number; target: SyncTarget; trigger: SyncTrigger; full: boolean };

/** Mirror worker → main thread: a requested run's outcome, or the feed's new head after a commit. */
export type SyncOut = { type: 'outcome'; id: number; outcome: RunOutcome } | FeedMessage;

/** Options of {@link createSyncThread}. */
export interface SyncThreadOptions {
  /** The worker module beside this file (default: "../app/syncWorker"; tests name a missing one). */
  workerModule?: string;
  /** The root's sink for changes of the records' shape, should the runs fall back to this thread (default: none). */
  onSchemaChange?: SchemaChangeSink | undefined;
}

/**
 * The runner in a worker thread (its operator client shares the daemon's rate budget, which /status
 * shows). Its start does not wait for the worker to load (requests queue at the worker meanwhile), so the
 * daemon is ready as soon as its listeners are; should the worker fail to start, syncs run in this
 * thread instead, and the log says so.
 */
export function createSyncThread(
  ctx: AppContext,
  sqlite: Sqlite,
  options: SyncThreadOptions = {},
): SyncRunner {
  type Pending = {
    target: SyncTarget;
    trigger: SyncTrigger;
    full: boolean;
    resolve: (o: RunOutcome) => void;
  };
  const pending = new Map<number, Pending>();
  let nextId = 1;
  let here: SyncCoordinator | undefined;
  /** Whether the worker ever started: until it has, a worker's exit is its failure to start. */
  let started = false;
  const runHere = (p: Pending) => {
    void here!
      .request(p.target, p.trigger, p.full)
      .then(p.resolve, (err: unknown) => p.resolve(outcomeWithoutRun(p.target, 'failed', errorMessage(err))));
  };
  const host = hostThread<SyncIn, SyncOut>(ctx, {
    module: options.workerModule ?? '../app/syncWorker',
    from: import.meta.url,
    events: 'sync',
    label: 'sync thread',
    store: sqliteHostedStore(sqlite),
    onMessage(message) {
      if (message.type === 'vcu-sync.feed') {
        changeSignalFor(sqlite).announce(message.seq);
        return;
      }
      const request = pending.get(message.id);
      pending.delete(message.id);
      request?.resolve(message.outcome);
    },
    onExit(stopping) {
      // Requests in flight end with the thread: their callers hear it (or, when the thread never
      // started, they run here), and its unfinished runs are recorded as interrupted (the next run
      // resumes from their checkpoints).
      // A worker that never started is followed by its start's rejection, which moves the requests
      // here (start below); the two arrive in either order.
      if (!started && !here && !stopping) return;
      for (const [id, request] of pending) {
        pending.delete(id);
        if (here) runHere(request);
        else request.resolve(outcomeWithoutRun(request.target, 'interrupted', 'the sync thread ended'));
      }
      if (stopping) return;
      try {
        markInterruptedRuns(ctx, sqlite);
      } catch {
        // The next start of a run marks them: acquiring a run looks for dead ones first.
      }
    },
  });
  return {
    async start() {
      // Before any run: the runs a previous process left `running` are marked interrupted.
      markInterruptedRuns(ctx, sqlite);
      void host.start().then(
        () => {
          started = true;
        },
        (err: unknown) => {
          here = new SyncCoordinator(ctx, (stop) => sqliteBackend(sqlite, stop, options.onSchemaChange));
          for (const [id, request] of pending) {
            pending.delete(id);
            runHere(request);
          }
          ctx.log.error(
            { event: 'sync.thread.unavailable', error: errorMessage(err) },
            `the sync thread did not start (${errorMessage(err)}); syncs run on the main thread`,
          );
        },
      );
    },
    async stop() {
      await host.stop();
      await here?.stop();
    },
    request(target, trigger, full = false) {
      return new Promise<RunOutcome>((resolve) => {
        const request = { target, trigger, full, resolve };
        if (here) return runHere(request);
        const id = nextId++;
        pending.set(id, request);
        if (host.post({ type: 'request', id, target, trigger, full })) return;
        pending.delete(id);
        resolve(
          outcomeWithoutRun(target, 'failed', 'the sync thread is not running (it is being restarted)'),
        );
      });
    },
  };
}
