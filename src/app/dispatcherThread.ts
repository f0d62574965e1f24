/**
 * The dispatcher as a daemon component that runs it in a worker thread (./dispatcherWorker.ts) with
 * its own database connection. Why: profiles of the enqueue benchmark showed the API's answers
 * waiting behind the dispatcher's HTTP work and commits on the one event loop. The API's own writes
 * stay on the main connection's commit queue (a 201 still means the row is on disk); the two
 * connections meet only at SQLite's write lock, held by either for one short commit.
 *
 * The operator rate limit: the worker's operator client takes its tokens from the daemon's one
 * budget (AppContext.operatorBudget, in memory the threads share), as the mirror's does, so sends
 * and syncs together keep to `operator.rate_per_second`, and a 429 seen by either slows both.
 */

import type { RequestSync } from '../common/syncRequests.js';
import type { AppContext, Component } from '../context.js';
import type { DispatcherIn, DispatcherOut } from '../outbox/dispatcherMessages.js';
import { hostThread } from '../thread/host.js';
import type { HostedStore } from '../thread/messages.js';

/** Options of {@link createDispatcherThreadComponent}. */
export interface DispatcherThreadOptions {
  /** The store's side of the worker, from the store's factory. */
  store: HostedStore;
  /** Serves the worker's requests for a custody sync (default: none). */
  requestSync?: RequestSync | undefined;
  /** Called when the worker committed a claim or a settle (default: none). */
  onCommitted?: () => void;
  /** Wait before a worker that died unexpectedly is started again, ms (default: 1000). */
  restartDelayMs?: number;
}

/** The dispatcher component run in a worker thread; `wake` posts the wake-up to it. */
export function createDispatcherThreadComponent(
  ctx: AppContext,
  options: DispatcherThreadOptions,
): Component & { wake: () => void; sendingPaused: () => boolean } {
  const host = hostThread<DispatcherIn, DispatcherOut>(ctx, {
    module: 'dispatcherWorker',
    from: import.meta.url,
    events: 'outbox',
    label: 'dispatcher thread',
    store: options.store,
    // Its claims are held by leases with this process's owner name; a new worker's claims take
    // them once the leases run out. Sending resumes at once for every other row.
    ...(options.restartDelayMs !== undefined ? { restartDelayMs: options.restartDelayMs } : {}),
    onMessage(message) {
      if (message.type === 'committed') options.onCommitted?.();
      else if (message.type === 'paused') paused = message.paused;
      else void options.requestSync?.(message.targets, message.trigger).catch(() => false);
    },
  });
  /**
   * Sending is paused (an auth failure): the worker claims nothing but its probe, on its own timer,
   * so a wake-up would only cost a postMessage here and a loop turn there, once per turn of the
   * API's loop (profiled: the paused daemon's API thread spent 4x the draining one's time posting).
   */
  let paused = false;
  // One wake-up per turn of the loop however many enqueues asked: a postMessage per request was
  // ~4 % of the API thread's time at 500 enqueues/s.
  let wakePosted = false;
  const wake = () => {
    if (wakePosted || paused) return;
    wakePosted = true;
    setImmediate(() => {
      wakePosted = false;
      host.post({ type: 'wake' });
    });
  };
  return {
    name: 'dispatcher',
    wake,
    // What the worker last said: wake-ups are skipped while it is true.
    sendingPaused: () => paused,
    start: host.start,
    stop: host.stop,
  };
}
