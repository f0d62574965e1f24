import type pg from 'pg';
import type { OperationRow } from './rows.js';
import type { AttemptRecord, Claim, ClaimParams, SettleStep } from './store.js';

/**
 * The dispatcher's settles and claims on PostgreSQL, grouped: what is submitted while a group's
 * transaction runs goes into the next one, so a settle, the refill claim submitted beside it and
 * their neighbours share one transaction (one statement per kind of work, one feed append, one
 * commit) rather than a transaction each. SQLite's group commit (db/commitQueue.ts) does the same
 * for its fsync; here it is round trips and the feed lock, which every writer waits for in turn.
 * As there, the group is atomic: if its transaction fails, every job in it fails (the rows' leases
 * run out and they are claimed again: at-least-once, never lost).
 */

/** A settle waiting for the next group. */
export interface SettleJob {
  kind: 'settle';
  claim: Claim;
  attempt: AttemptRecord;
  step: SettleStep;
  resolve(moved: boolean): void;
  reject(err: unknown): void;
}

/** A claim waiting for the next group; its parameters are taken when the group runs. */
export interface ClaimJob {
  kind: 'claim';
  given: ClaimParams | (() => ClaimParams);
  resolve(rows: OperationRow[]): void;
  reject(err: unknown): void;
}

export type GroupJob = SettleJob | ClaimJob;

/**
 * Runs `flush` on the jobs submitted so far, one group at a time; jobs submitted meanwhile wait for
 * the next. A job submitted while nothing runs starts a group at the end of the current turn, so
 * the jobs of one turn (a settle and its refill) go together.
 */
export class GroupRunner {
  private queue: GroupJob[] = [];
  private running = false;

  constructor(private readonly flush: (jobs: GroupJob[]) => Promise<void>) {}

  submit(job: GroupJob): void {
    this.queue.push(job);
    if (this.running) return;
    this.running = true;
    queueMicrotask(() => void this.drain());
  }

  private async drain(): Promise<void> {
    while (this.queue.length > 0) {
      const jobs = this.queue;
      this.queue = [];
      try {
        await this.flush(jobs);
      } catch (err) {
        // A job settled before the failure keeps its answer (a promise settles once).
        for (const job of jobs) job.reject(err);
      }
    }
    this.running = false;
  }
}

/**
 * One claim statement for several claims of one owner: each claim's share of the rows it returned,
 * oldest first, in the order the claims were submitted, each up to its own limit.
 */
export function shareClaimed<R extends { id: number }>(rows: readonly R[], limits: readonly number[]): R[][] {
  const sorted = [...rows].sort((a, b) => a.id - b.id);
  let next = 0;
  return limits.map((limit) => {
    const share = sorted.slice(next, next + Math.max(0, limit));
    next += share.length;
    return share;
  });
}

/** Claims grouped by owner, in submission order: one claim statement each. */
export function claimsByOwner(
  claims: ReadonlyArray<{ job: ClaimJob; params: ClaimParams }>,
): Array<Array<{ job: ClaimJob; params: ClaimParams }>> {
  const byOwner = new Map<string, Array<{ job: ClaimJob; params: ClaimParams }>>();
  for (const claim of claims) {
    const group = byOwner.get(claim.params.owner);
    if (group) group.push(claim);
    else byOwner.set(claim.params.owner, [claim]);
  }
  return [...byOwner.values()];
}

/**
 * How long a settle or a release waits for a row another transaction holds (ms). Concurrent
 * claims hold rows for a moment (candidates past their cut, rows failing the re-check), which a
 * wait this long outlasts; a transaction left idle after updating outbox rows must not hold the
 * dispatcher's settles, and the send slots and groups behind them, for as long as it idles.
 */
export const ROW_LOCK_TIMEOUT_MS = 200;

/** A settle whose row another transaction holds: tried again (settleDurably), the row untouched. */
export class RowLockedError extends Error {
  /** PostgreSQL's lock_not_available, as a timed-out lock would report. */
  readonly code = '55P03';
  constructor(id: number) {
    super(`outbox row ${id} is locked by another transaction`);
    this.name = 'RowLockedError';
  }
}

/**
 * Locks the rows about to be settled; returns those this transaction now holds. Rows nobody holds,
 * the usual case, take one statement. A row held elsewhere is waited for up to
 * {@link ROW_LOCK_TIMEOUT_MS}, each in its own savepoint: a timed-out wait (55P03) aborts what it
 * is in, and one held row must not fail the whole group; that row alone is left out.
 */
export async function lockSettleRows(client: pg.ClientBase, ids: readonly number[]): Promise<Set<number>> {
  if (ids.length === 0) return new Set();
  const { rows } = await client.query<{ id: number }>(
    'SELECT id::float8 AS id FROM outbox WHERE id = ANY($1::int8[]) ORDER BY id FOR UPDATE SKIP LOCKED',
    [ids],
  );
  const locked = new Set(rows.map((r) => r.id));
  const held = [...new Set(ids)].filter((id) => !locked.has(id)).sort((a, b) => a - b);
  if (held.length === 0) return locked;
  await client.query(`SET LOCAL lock_timeout = ${ROW_LOCK_TIMEOUT_MS}`);
  for (const id of held) {
    await client.query('SAVEPOINT settle_lock');
    try {
      await client.query('SELECT 1 FROM outbox WHERE id = $1 FOR UPDATE', [id]);
      await client.query('RELEASE SAVEPOINT settle_lock');
      locked.add(id);
    } catch (err) {
      if ((err as { code?: unknown }).code !== '55P03') throw err;
      await client.query('ROLLBACK TO SAVEPOINT settle_lock');
    }
  }
  // The rest of the group (claims, the feed's lock) waits as before: their holders commit at once.
  await client.query('SET LOCAL lock_timeout TO DEFAULT');
  return locked;
}
