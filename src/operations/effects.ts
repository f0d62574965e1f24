import type pg from 'pg';
import type { Sqlite } from '../db/open.js';
import type { OperationState } from './states.js';

/**
 * Where an operation's state changes go besides the change feed: a sink the composition root hands
 * to the stores (daemon.ts, pgDaemon.ts, the CLI's context), implemented above them (the
 * subscribers' deliveries, subscribers/enqueue.ts and pgEnqueue.ts). The stores call it inside the
 * transaction that makes the change, so what it writes commits with the change or not at all; they
 * never import who listens ("effects flow down", .dependency-cruiser.cjs).
 */

/** One state change of one operation, as it commits. */
export interface StateChange {
  ref: string;
  /** null when the operation is created. */
  from: OperationState | null;
  to: OperationState;
  /** When (ISO). */
  at: string;
}

/** SQLite's sink: synchronous, run inside the change's transaction (better-sqlite3 awaits nothing there). */
export type SqliteStateChangeSink = (sqlite: Sqlite, changes: readonly StateChange[]) => void;

/** PostgreSQL's sink: its statements run on `client`, inside the change's transaction. */
export type PgStateChangeSink = (client: pg.ClientBase, changes: readonly StateChange[]) => Promise<void>;

const sinks = new WeakMap<Sqlite, SqliteStateChangeSink>();

/**
 * Hands this SQLite handle its sink: every state change committed through it calls `sink` (none:
 * changes reach only the feed). Set where the handle is opened, by the root that opens it, in every
 * process and thread that may change an operation (daemon, its workers, the CLI).
 */
export function useStateChangeSink(sqlite: Sqlite, sink: SqliteStateChangeSink | undefined): void {
  if (sink) sinks.set(sqlite, sink);
  else sinks.delete(sqlite);
}

/** The sink of this handle, if one was handed to it. */
export function stateChangeSinkOf(sqlite: Sqlite): SqliteStateChangeSink | undefined {
  return sinks.get(sqlite);
}
