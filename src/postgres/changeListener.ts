import type pg from 'pg';
import { backoffDelayMs } from '../common/backoff.js';
import { cancellableSleep } from '../common/clock.js';
import type { ChangeSignal } from '../db/changeSignal.js';
import { FEED_CHANNEL } from './changes.js';

/**
 * Feeds PostgreSQL's `NOTIFY vcu_sync_changes` into a {@link ChangeSignal}, so long-polls and event
 * streams on every replica wake when any replica commits to the feed (the writer notifies with its
 * commit: ./pgChanges.ts). One dedicated connection per process holds the LISTEN.
 *
 * A notification carries the last seq, but readers never trust it: a woken reader queries
 * `seq > after`. So the one thing that matters is never to sleep through a commit. When the
 * listening connection drops, notifications sent meanwhile are lost; on reconnecting the listener
 * announces once at once (a spurious wake costs each waiter one indexed query) and goes on.
 */

/** What {@link listenForChanges} needs. */
export interface ChangeListenerDeps {
  pool: pg.Pool;
  signal: ChangeSignal;
  /** Told when the connection drops or cannot be made (its message has no secrets: pg's own words). */
  onError?: (err: Error) => void;
  /** Reconnect spacing: doubled from base to cap with jitter (default: 200 ms to 10 s). */
  reconnect?: { baseMs: number; capMs: number };
  /** Random source for the jitter (default: Math.random). */
  random?: () => number;
}

/** A running listener. */
export interface ChangeListener {
  /** Resolves once LISTEN is in place on a live connection (again after a reconnect). */
  ready(): Promise<void>;
  /** Ends the LISTEN and releases its connection. */
  stop(): Promise<void>;
}

/** Starts listening; the returned listener reconnects on its own until stopped. */
export function listenForChanges(deps: ChangeListenerDeps): ChangeListener {
  const stopping = new AbortController();
  const policy = deps.reconnect ?? { baseMs: 200, capMs: 10_000 };
  const random = deps.random ?? Math.random;
  let markReady: () => void = () => {};
  let readyNow = new Promise<void>((resolve) => {
    markReady = resolve;
  });

  const onNotification = (message: pg.Notification) => {
    if (message.channel !== FEED_CHANNEL) return;
    deps.signal.announce(Number(message.payload) || 0);
  };

  /**
   * Holds one connection until it fails (resolves then, or when stopping). After a reconnect it
   * announces once: whatever committed while no LISTEN was in place was not heard.
   */
  const holdOne = async (reconnect: boolean): Promise<void> => {
    const held = await deps.pool.connect();
    let failed = false;
    // `on`, not `once`: pg emits the server's message, then "Connection terminated unexpectedly".
    const onHeldError = (err: Error) => {
      if (failed) return;
      failed = true;
      deps.onError?.(err);
    };
    let resolveLost: () => void = () => {};
    const onLost = (err: Error) => {
      onHeldError(err);
      resolveLost();
    };
    held.on('error', onLost);
    const lost = new Promise<void>((resolve) => {
      resolveLost = resolve;
      held.once('end', () => resolve());
      stopping.signal.addEventListener('abort', () => resolve(), { once: true });
    });
    held.on('notification', onNotification);
    let healthy = false;
    try {
      await held.query(`LISTEN ${FEED_CHANNEL}`);
      markReady();
      if (reconnect) deps.signal.announce(0);
      await lost;
      healthy = stopping.signal.aborted;
      if (healthy) await held.query(`UNLISTEN ${FEED_CHANNEL}`);
    } catch (err) {
      // LISTEN itself failed: the connection broke as it was asked (its error event said so).
      if (!failed) onHeldError(err instanceof Error ? err : new Error(String(err)));
      throw err;
    } finally {
      held.off('notification', onNotification);
      // Later errors of a broken one reach the pool's lifelong listener (./pgPool.ts).
      held.off('error', onLost);
      // A connection that failed is destroyed rather than returned to the pool.
      held.release(healthy ? undefined : true);
    }
  };

  const loop = (async () => {
    let failures = 0;
    let connections = 0;
    while (!stopping.signal.aborted) {
      try {
        await holdOne(connections++ > 0);
        failures = 0;
      } catch {
        // No connection (the database is away: its tracker says so once, not per attempt) or it
        // broke at LISTEN (told above): try again after the backoff.
        failures++;
      }
      if (stopping.signal.aborted) break;
      readyNow = new Promise<void>((resolve) => {
        markReady = resolve;
      });
      await cancellableSleep(backoffDelayMs(Math.max(failures, 1), policy, random), stopping.signal);
    }
  })();

  return {
    ready: () => readyNow,
    async stop() {
      stopping.abort();
      await loop;
    },
  };
}
