import type { Component } from '../context.js';

/**
 * A daemon's liveness, one port for both stores: who it is to the store, and whether it may claim.
 *
 *   starting ──start()──▶ alive ⇄ lost ──stop()──▶ stopped      (stop() from alive too)
 *
 * - starting: claims nothing. SQLite took the file's locks as it opened (a second daemon on the
 *   file is refused there, src/sqlite/ownership.ts); PostgreSQL takes its liveness lock on a session
 *   of its own (src/postgres/liveness.ts), failing the start if it cannot.
 * - alive: `start()` then handed back what dead processes held (SQLite: every claim, its previous
 *   owner having died; PostgreSQL: those of replicas whose lock is free, then again every sweep of
 *   src/postgres/presence.ts, calling {@link Liveness.onHandBack}'s listeners).
 * - lost (PostgreSQL only: SQLite's lock is the kernel's, held for the process's life): the liveness
 *   session broke, the other replicas presume this one dead and may hand its claims back, so it
 *   claims nothing and the dispatchers hand back what they claimed ahead; the lock is re-taken with
 *   backoff, and it is alive again.
 * - stopped: after every other component stopped (the dispatchers handed their claims back).
 *   PostgreSQL drops its lock and its `replicas` row; SQLite clears its daemon record (its file's
 *   locks go when the stores close).
 *
 * Implemented once per store: SQLite's in ./sqliteDaemon.ts, PostgreSQL's is the replica's presence
 * (src/postgres/presence.ts). The daemon starts it first and stops it last (./daemon.ts); whatever
 * claims (both dispatchers, the claim-ahead's hand-back) asks `alive()`.
 */
export interface Liveness extends Component {
  /** This process's lease owner: its outbox claims, its deliveries' claims, its liveness lock. */
  readonly owner: string;
  /** Whether claiming is safe now: true only while alive. */
  alive(): boolean;
  /** Every component started: the daemon is up (SQLite: its record, for `status`'s uptime). */
  ready(): void;
  /** Calls `fn` with the count whenever claims of a dead process came back while this one runs (PostgreSQL's sweeps). */
  onHandBack(fn: (count: number) => void): void;
}
