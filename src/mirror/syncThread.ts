/**
 * The mirror's sync runs in a worker thread (syncWorker.ts) with its own database connection. Why:
 * while a full sync wrote pages on the daemon's loop, an enqueue waited behind each page's parsing,
 * validation, hashing and writes (25-75 ms a page, more with held commits): p99 625 ms against a
 * target of 5. In its thread the sync's CPU leaves the API's loop, and its bulk writes give way to
 * the API's commits at the writer gate (db/writerGate.ts), so an enqueue waits for the lock about a
 * millisecond, not a held commit.
 *
 * The schedules, the requests of the API, the webhooks and the dispatcher stay in the main thread
 * (scheduler.ts); this is only where runs happen. One run per target at a time still holds: every
 * request goes to the one coordinator in the worker.
 */
import type { AppContext, SyncTarget, SyncTrigger } from '../context.js';
import { changeSignalFor } from '../db/changeSignal.js';
import { hostThread } from '../thread/host.js';
import { markInterruptedRuns } from './recovery.js';
import type { SyncIn, SyncOut } from './syncMessages.js';
import { outcomeWithoutRun, type RunOutcome } from './syncRun.js';

/** Where the mirror component's runs happen: in this thread (SyncCoordinator) or the worker's. */
export interface SyncRunner {
  start?(): Promise<void>;
  request(target: SyncTarget, trigger: SyncTrigger, full?: boolean): Promise<RunOutcome>;
  stop(): Promise<void>;
}

/** The runner in a worker thread; `operatorRate` is the worker's operator client's, once it made one. */
export function createSyncThread(ctx: AppContext): SyncRunner & { operatorRate(): number | null } {
  const pending = new Map<number, { target: SyncTarget; resolve: (outcome: RunOutcome) => void }>();
  let nextId = 1;
  let rate: number | null = null;
  const host = hostThread<SyncIn, SyncOut>(ctx, {
    module: 'syncWorker',
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
    onMetric(name, method, args) {
      if (name === 'operatorRate' && method === 'set' && typeof args[0] === 'number') rate = args[0];
    },
    onExit(stopping) {
      // Requests in flight end with the thread: their callers hear it, and its unfinished runs are
      // recorded as interrupted (the next run resumes from their checkpoints).
      for (const [id, request] of pending) {
        pending.delete(id);
        request.resolve(outcomeWithoutRun(request.target, 'interrupted', 'the sync thread ended'));
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
    start: host.start,
    stop: host.stop,
    operatorRate: () => rate,
    request(target, trigger, full = false) {
      const id = nextId++;
      return new Promise<RunOutcome>((resolve) => {
        pending.set(id, { target, resolve });
        if (host.post({ type: 'request', id, target, trigger, full })) return;
        pending.delete(id);
        resolve(
          outcomeWithoutRun(target, 'failed', 'the sync thread is not running (it is being restarted)'),
        );
      });
    },
  };
}
