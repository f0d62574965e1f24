import type { MessagePort } from 'node:worker_threads';
import type { ChangeSignal, FeedMessage } from '../db/changeSignal.js';

/**
 * Commits made on another connection (the dispatcher in a worker thread with its own database
 * handle) announce on that connection's signal; the main thread's readers wait on theirs. These two
 * join them: the worker forwards "the feed holds rows up to seq N" over a MessagePort after each
 * commit, the main thread announces it. A PostgreSQL store's LISTEN/NOTIFY handler would call
 * `announce` the same way.
 */

function isFeedMessage(value: unknown): value is FeedMessage {
  return (
    typeof value === 'object' &&
    value !== null &&
    (value as { type?: unknown }).type === 'vcu-sync.feed' &&
    typeof (value as { seq?: unknown }).seq === 'number'
  );
}

/** In the worker: posts every announcement of `from` to `port`; returns the stop. */
export function forwardFeed(from: ChangeSignal, port: Pick<MessagePort, 'postMessage'>): () => void {
  return from.listen((seq) => port.postMessage({ type: 'vcu-sync.feed', seq } satisfies FeedMessage));
}

/** In the main thread: announces on `to` what arrives on `port` (other messages are left alone). */
export function receiveFeed(port: Pick<MessagePort, 'on' | 'off'>, to: ChangeSignal): () => void {
  const onMessage = (message: unknown) => {
    if (isFeedMessage(message)) to.announce(message.seq);
  };
  port.on('message', onMessage);
  return () => port.off('message', onMessage);
}
