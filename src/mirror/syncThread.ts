/**
 * The mirror's sync runs in a worker thread (app/syncWorker.ts) with its own database connection. Why:
 * while a full sync wrote pages on the daemon's loop, an enqueue waited behind each page's parsing,
 * validation, hashing and writes (25-75 ms a page, more with held commits): p99 625 ms against a
 * target of 5. In its thread the sync's CPU leaves the API's loop, and its bulk writes give way to
 * the API's commits at the writer gate (sqlite/writerGate.ts), so an enqueue waits for the lock about a
 * millisecond, not a held commit.
 *
 * The schedules, the requests of the API, the webhooks and the dispatcher stay in the main thread
 * (scheduler.ts); this is only where runs happen. One run per target at a time still holds: every
 * request goes to the one coordinator in the worker.
 */

import type { AppContext, SyncTarget, SyncTrigger } from '../context.js';
import { errorMessage } from '../errors.js';
import { changeSignalFor } from '../sqlite/changes.js';
import { hostThread } from '../thread/host.js';
import { SyncCoordinator } from './coordinator.js';
import { markInterruptedRuns } from './recovery.js';
import type { SyncIn, SyncOut } from './syncMessages.js';
import { outcomeWithoutRun, type RunOutcome } from './syncRun.js';

/** Where the mirror component's runs happen: in this thread (SyncCoordinator) or the worker's. */
export interface SyncRunner {
  start?(): Promise<void>;
  request(target: SyncTarget, trigger: SyncTrigger, full?: boolean): Promise<RunOutcome>;
  stop(): Promise<void>;
}

/** Options of {@link createSyncThread}. */
export interface SyncThreadOptions {
  /** The worker module beside this file (default: "../app/syncWorker"; tests name a missing one). */
  workerModule?: string;
}

/**
 * The runner in a worker thread (its operator client shares the daemon's rate budget, which /status
 * shows). Its start does not wait for the worker to load (requests queue at the worker meanwhile), so the
 * daemon is ready as soon as its listeners are; should the worker fail to start, syncs run in this
 * thread instead, and the log says so.
 */
export function createSyncThread(ctx: AppContext, options: SyncThreadOptions = {}): SyncRunner {
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
    onMessage(message) {
      if (message.type === 'vcu-sync.feed') {
        changeSignalFor(ctx.database.sqlite).announce(message.seq);
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
        markInterruptedRuns(ctx);
      } catch {
        // The next start of a run marks them: acquiring a run looks for dead ones first.
      }
    },
  });
  return {
    async start() {
      void host.start().then(
        () => {
          started = true;
        },
        (err: unknown) => {
          here = new SyncCoordinator(ctx);
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
