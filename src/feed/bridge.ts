import type { MessagePort } from 'node:worker_threads';
import type { ChangeSignal, FeedMessage } from '../db/changeSignal.js';

/**
 * Commits made on another connection (the mirror in a worker thread with its own database handle)
 * announce on that connection's signal; the main thread's readers wait on theirs. The worker
 * forwards "the feed holds rows up to seq N" over its MessagePort after each commit; the main
 * thread's host of that worker announces it (sqlite/syncThread.ts).
 */

/** In the worker: posts every announcement of `from` to `port`; returns the stop. */
export function forwardFeed(from: ChangeSignal, port: Pick<MessagePort, 'postMessage'>): () => void {
  return from.listen((seq) => port.postMessage({ type: 'vcu-sync.feed', seq } satisfies FeedMessage));
}
