import type { Dialect, Sql } from './sql.js';

/**
 * A rule that reads and writes, written once for both stores: a generator that yields each
 * statement ({@link Sql}) and gets its outcome back. The SQLite adapter drives it synchronously
 * inside one job of the connection's group commit (better-sqlite3 transactions must not await);
 * the PostgreSQL adapter drives it with awaits inside one transaction. The script itself never
 * awaits and never names a store: `yield* all(sql\`...\`)` reads, `yield* run(...)` writes,
 * `yield* appendFeed(rows)` adds change-feed rows that commit with it.
 *
 * ```ts
 * function* cancel(id: number, now: string): Script<boolean> {
 *   const moved = yield* run(sql`UPDATE outbox SET state = 'cancelled' WHERE id = ${id} AND ...`);
 *   if (moved.rowCount) yield* appendFeed([{ resource: 'operations', recordId: ..., kind: 'cancelled', at: now }]);
 *   return moved.rowCount > 0;
 * }
 * await store.transaction(cancel(7, now));
 * ```
 */
export type Script<T> = Generator<Step, T, Outcome>;

/** A row as read: column name to value (ISO text for times and numbers for ids, on both stores). */
export type Row = Record<string, unknown>;

/** What a statement did: the rows it returned (a SELECT, a RETURNING) and how many rows it changed. */
export interface Outcome {
  rows: Row[];
  rowCount: number;
}

/** One row of the change feed: which record of which resource changed how, and when (ISO). */
export interface ChangeRow {
  resource: string;
  recordId: string;
  kind: string;
  at: string;
}

/** Change-feed rows to append in the script's transaction (each adapter's changes.ts). */
export interface FeedStep {
  readonly feed: readonly ChangeRow[];
}

/** What a script yields: a statement to run, or feed rows to append. */
export type Step = Sql | FeedStep;

/** Runs a statement: its outcome. */
export function* run(statement: Sql): Generator<Step, Outcome, Outcome> {
  return yield statement;
}

/** Runs a statement: the rows it returned. */
export function* all<R extends object = Row>(statement: Sql): Generator<Step, R[], Outcome> {
  return (yield statement).rows as R[];
}

/** Runs a statement: its first row, if any. */
export function* first<R extends object = Row>(statement: Sql): Generator<Step, R | undefined, Outcome> {
  return (yield statement).rows[0] as R | undefined;
}

/** Appends change-feed rows, committed with the script (and not at all when it fails). */
export function* appendFeed(rows: readonly ChangeRow[]): Generator<Step, void, Outcome> {
  if (rows.length > 0) yield { feed: rows };
}

/** How long a request's write waits for another process's lock before the request is refused, ms. */
export const REQUEST_BUSY_GRACE_MS = 1_000;

/** How a transaction may wait: asked by SQLite's group commit, met anyway elsewhere. */
export interface TransactionOptions {
  /**
   * Whether the promise waits for the commit's fsync. False answers once the transaction has
   * committed, before its fsync: only for work that a power loss may take back harmlessly because
   * it is done again (a dispatcher's claim or settle: the row is sent again, at-least-once), never
   * for anything a client is told is stored (default: true).
   */
  durable?: boolean;
  /**
   * How long the write may wait for another process's lock (SQLite: the file's write lock;
   * PostgreSQL: a row or advisory lock, as `lock_timeout`) before it is refused with a
   * DatabaseUnavailable error, ms (default: no limit, for background work that must not be lost).
   */
  busyGraceMs?: number;
  /**
   * Where one process owns the store (SQLite): work that may wait up to this long for more to join
   * its group commit, ms. While only such work is queued, its groups start at most this often, so
   * a busy dispatcher's claims and settles commit a few milliseconds' worth at a time rather than a
   * few rows; anything else queued starts the group at once, and after a quiet spell the first group
   * does not wait (default: 0, never waits).
   */
  groupSpacingMs?: number;
}

/**
 * A store as the rules see it: scripts in transactions, reads, and the dialect to spell
 * statements and ask capabilities. Made by each adapter (its commit queue, its pool's scripts).
 */
export interface ScriptStore {
  readonly dialect: Dialect;
  /** Runs `script` in one transaction: all of it commits, or none of it (the error goes on). */
  transaction<T>(script: Script<T>, options?: TransactionOptions): Promise<T>;
  /** Runs one read outside any transaction. */
  read<R extends object = Row>(statement: Sql): Promise<R[]>;
}

/** Whether a step is feed rows (else a statement). */
export function isFeedStep(step: Step): step is FeedStep {
  return 'feed' in step;
}
