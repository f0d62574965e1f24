import type pg from 'pg';
import { inPgTransaction } from '../db/pg.js';
import type { StateChange, StateChangeSink } from './effects.js';
import { CLAIM_BEGIN_SQL, CLAIM_SQL } from './pgClaimSql.js';
import {
  type ClaimJob,
  claimsByOwner,
  type GroupJob,
  GroupRunner,
  lockSettleRows,
  ROW_LOCK_TIMEOUT_MS,
  RowLockedError,
  type SettleJob,
  shareClaimed,
} from './pgGroup.js';
import { releaseDeadPg } from './pgLiveness.js';
import { operationColumns, PG_GUARD, stateChangedPg } from './pgRows.js';
import { eventAppliesSql, type OperationRow } from './rows.js';
import type { OperationState } from './states.js';
import type { AttemptRecord, Claim, ClaimParams, NewOperation, SettleStep } from './store.js';
import type { DecisionRecord, OperationsStore } from './storeSeam.js';

/**
 * The operations store on PostgreSQL, shared by several replicas: the same statements as
 * store.ts, each call one transaction of few round trips (multi-row `unnest`), the guards from the
 * same transition table. Every statement binds $1 = now and $2 = owner (see PG_GUARD).
 *
 * Order per order key across replicas: a row is claimable only when no older row of its key is
 * queued or sending (NOT EXISTS), and the claim is ONE statement (candidates FOR UPDATE SKIP
 * LOCKED, then the guarded UPDATE), so no claim lock is needed. Why concurrent claimers cannot take
 * two rows of one key: the statement's snapshot may be stale, but a stale older row can only look
 * MORE blocking than it is (queued or sending, not yet settled), so at most the oldest unsettled
 * row of a key is ever a candidate; two claimers racing for that row meet on its row lock (SKIP
 * LOCKED, and the re-check of the guard on the newest version drops a row another claim took).
 * The one move that unsettles an older row again, a person's retry of a failed row, lets it go
 * beside a newer one in flight on SQLite too. What the snapshot must not miss is an OLDER row not
 * committed yet: enqueues take a transaction lock per order key, so ids of one key are handed
 * out in commit order (else a claimer could see id 6 of a key committed while id 5 is in flight).
 * test/postgres/pgOperationsClaims.test.ts runs 8 claimers and checks no key is ever out twice.
 */

const where = (event: Parameters<typeof eventAppliesSql>[0]) =>
  `WHERE id = $3 AND ${eventAppliesSql(event, '', PG_GUARD)}`;

const CLEAR_LEASE = 'lease_owner = NULL, lease_until = NULL';

/** A settle's values per row, as `unnest` columns: every step's, null where a step has none. */
const SETTLE_COLUMNS: ReadonlyArray<readonly [string, string, (job: SettleJob) => unknown]> = [
  ['id', 'int8', (j) => j.claim.id],
  ['now', 'timestamptz', (j) => j.claim.now],
  ['owner', 'text', (j) => j.claim.owner],
  ['started_at', 'timestamptz', (j) => j.attempt.startedAt],
  ['duration_ms', 'int4', (j) => j.attempt.durationMs],
  ['status_code', 'int4', (j) => j.attempt.statusCode],
  ['error', 'text', (j) => j.attempt.error],
  ['text', 'text', (j) => (j.step.to === 'accepted' ? j.step.response : j.step.error)],
  ['status', 'int4', (j) => j.step.status],
  ['next_attempt_at', 'timestamptz', (j) => (j.step.to === 'queued' ? j.step.nextAttemptAt : null)],
  ['refund', 'int4', (j) => (j.step.to === 'queued' && j.step.refund ? 1 : 0)],
];

/** The event each settle step is, and what it sets besides clearing the lease. */
const STEPS: Record<SettleStep['to'], { event: 'accept' | 'fail' | 'requeue'; set: string }> = {
  accepted: {
    event: 'accept',
    set: `state = 'accepted', response = s.text, last_status = s.status, last_error = NULL, accepted_at = s.now`,
  },
  failed: {
    event: 'fail',
    set: `state = 'failed', last_error = s.text, last_status = s.status, finished_at = s.now`,
  },
  queued: {
    event: 'requeue',
    set: `state = 'queued', next_attempt_at = s.next_attempt_at, last_error = s.text, last_status = s.status,
      attempts = GREATEST(0, outbox.attempts - s.refund)`,
  },
};

/**
 * Settles rows of one step at once: logs every attempt (whether or not its lease still holds, as on
 * SQLite) and moves the rows whose claimant still holds the lease; returns the ids moved. Each
 * row's guard reads its own claim's time and owner.
 */
const SETTLE_SQL = Object.fromEntries(
  Object.entries(STEPS).map(([to, { event, set }]) => [
    to,
    `WITH s AS (
       SELECT * FROM unnest(${SETTLE_COLUMNS.map(([, type], i) => `$${i + 1}::${type}[]`).join(', ')})
         AS s(${SETTLE_COLUMNS.map(([name]) => name).join(', ')})),
     attempt AS (
       INSERT INTO outbox_attempts (outbox_id, started_at, duration_ms, status_code, error)
       SELECT id, started_at, duration_ms, status_code, error FROM s)
     UPDATE outbox SET ${set}, updated_at = s.now, ${CLEAR_LEASE}
     FROM s
     WHERE outbox.id = s.id AND ${eventAppliesSql(event, 'outbox.', { now: 's.now', owner: 's.owner' })}
     RETURNING outbox.id::float8 AS id`,
  ]),
) as Record<SettleStep['to'], string>;

/** Options of {@link PgOperationsStore}. */
export interface PgOperationsStoreOptions {
  /** What each state change writes in its transaction besides the feed (effects.ts; default: nothing). */
  onStateChange?: StateChangeSink;
  /** This replica's lease owner: `releaseDead` never hands back its own claims. */
  leaseOwner: string;
}

export class PgOperationsStore implements OperationsStore {
  private readonly sink: StateChangeSink | undefined;
  /** Where settles and claims wait for their group's transaction. */
  private readonly group = new GroupRunner((jobs) => this.flushGroup(jobs));

  constructor(
    private readonly pool: pg.Pool,
    private readonly options: PgOperationsStoreOptions,
  ) {
    this.sink = options.onStateChange;
  }

  private tx<T>(work: (client: pg.PoolClient) => Promise<T>, begin?: string): Promise<T> {
    return inPgTransaction(this.pool, work, begin === undefined ? {} : { begin });
  }

  /** One guarded UPDATE of one row; its state change commits with it, or nothing when refused. */
  private moveOne(
    sql: string,
    values: unknown[],
    change: StateChange | null,
    lockTimeoutMs?: number,
  ): Promise<boolean> {
    return this.tx(async (client) => {
      if (lockTimeoutMs !== undefined) await client.query(`SET LOCAL lock_timeout = ${lockTimeoutMs}`);
      const { rowCount } = await client.query(sql, values);
      if (lockTimeoutMs !== undefined) await client.query('SET LOCAL lock_timeout TO DEFAULT');
      if (!rowCount) return false;
      if (change) await stateChangedPg(client, this.sink, [change]);
      return true;
    });
  }

  insert(ops: readonly NewOperation[], nowIso: string): Promise<OperationRow[]> {
    if (ops.length === 0) return Promise.resolve([]);
    return this.tx(async (client) => {
      await client.query(
        `SELECT pg_advisory_xact_lock(hashtextextended(k, 0))
         FROM (SELECT DISTINCT k FROM unnest($1::text[]) AS k WHERE k IS NOT NULL ORDER BY k) AS keys`,
        [ops.map((o) => o.orderKey)],
      );
      const { rows } = await client.query<OperationRow>(
        `INSERT INTO outbox ("marketplaceTransactionRef", "operationType", order_key, body, body_hash, state,
                             attempts, next_attempt_at, created_at, updated_at)
         SELECT r, t, k, b, h, 'queued', 0, $1::timestamptz, $1::timestamptz, $1::timestamptz
         FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[]) WITH ORDINALITY AS n(r, t, k, b, h, i)
         ORDER BY i
         ON CONFLICT ("marketplaceTransactionRef") DO NOTHING
         RETURNING ${operationColumns()}`,
        [
          nowIso,
          ops.map((o) => o.ref),
          ops.map((o) => o.operationType),
          ops.map((o) => o.orderKey),
          ops.map((o) => o.body),
          ops.map((o) => o.hash),
        ],
      );
      rows.sort((a, b) => a.id - b.id);
      await stateChangedPg(
        client,
        this.sink,
        rows.map((r) => ({ ref: r.marketplaceTransactionRef, from: null, to: 'queued', at: nowIso })),
      );
      return rows;
    });
  }

  claim(given: ClaimParams | (() => ClaimParams)): Promise<OperationRow[]> {
    return new Promise((resolve, reject) => this.group.submit({ kind: 'claim', given, resolve, reject }));
  }

  settle(claim: Claim, attempt: AttemptRecord, step: SettleStep): Promise<boolean> {
    return new Promise((resolve, reject) =>
      this.group.submit({ kind: 'settle', claim, attempt, step, resolve, reject }),
    );
  }

  /**
   * One group's transaction: the settles (one statement per step), then the claims (one statement
   * per owner, so a refill sees the row its settle freed), then every state change at once.
   */
  private async flushGroup(jobs: GroupJob[]): Promise<void> {
    const settles = jobs.filter((j): j is SettleJob => j.kind === 'settle');
    const claims = jobs.filter((j): j is ClaimJob => j.kind === 'claim');
    const { moved, locked, shares } = await this.tx(
      async (client) => {
        const moved = new Set<number>();
        const changes: StateChange[] = [];
        // A row another transaction holds for long (one left idle after updating it) is stepped over
        // after a short wait: its settle alone fails and is tried again, the rest of the group commits.
        const locked = await lockSettleRows(
          client,
          settles.map((j) => j.claim.id),
        );
        for (const to of Object.keys(STEPS) as SettleStep['to'][]) {
          const these = settles.filter((j) => j.step.to === to && locked.has(j.claim.id));
          if (these.length === 0) continue;
          const values = SETTLE_COLUMNS.map(([, , value]) => these.map(value));
          const { rows } = await client.query<{ id: number }>(SETTLE_SQL[to], values);
          for (const row of rows) moved.add(row.id);
        }
        for (const j of settles)
          if (moved.has(j.claim.id))
            changes.push({ ref: j.claim.ref, from: 'sending', to: j.step.to, at: j.claim.now });
        const shares = new Map<ClaimJob, OperationRow[]>();
        const taken = claims.map((job) => ({
          job,
          params: typeof job.given === 'function' ? job.given() : job.given,
        }));
        for (const group of claimsByOwner(taken)) {
          // One statement for the owner's claims, at the first one's time and lease.
          const { now, owner, leaseUntil } = group[0]!.params;
          const limit = group.reduce((sum, c) => sum + c.params.limit, 0);
          const { rows } = await client.query<OperationRow & { from_state: OperationState }>(CLAIM_SQL, [
            now,
            owner,
            leaseUntil,
            limit,
          ]);
          const split = shareClaimed(
            rows,
            group.map((c) => c.params.limit),
          );
          group.forEach((c, i) => {
            const share = split[i]!;
            for (const r of share)
              changes.push({ ref: r.marketplaceTransactionRef, from: r.from_state, to: 'sending', at: now });
            shares.set(
              c.job,
              share.map(({ from_state: _, ...row }) => row),
            );
          });
        }
        await stateChangedPg(client, this.sink, changes);
        return { moved, locked, shares };
      },
      // A group with claims pins their plan in its BEGIN's message (one round trip fewer).
      claims.length > 0 ? CLAIM_BEGIN_SQL : undefined,
    );
    for (const j of settles) {
      if (locked.has(j.claim.id)) j.resolve(moved.has(j.claim.id));
      else j.reject(new RowLockedError(j.claim.id));
    }
    for (const j of claims) j.resolve(shares.get(j) ?? []);
  }

  release(claim: Claim): Promise<boolean> {
    return this.moveOne(
      `UPDATE outbox SET state = 'queued', attempts = GREATEST(0, attempts - 1), updated_at = $1, ${CLEAR_LEASE}
       ${where('release')}`,
      [claim.now, claim.owner, claim.id],
      { ref: claim.ref, from: 'sending', to: 'queued', at: claim.now },
      // A row held by another transaction fails fast: its lease runs out and it is claimed again.
      ROW_LOCK_TIMEOUT_MS,
    );
  }

  releaseAll(nowIso: string): Promise<Array<{ id: number; ref: string }>> {
    return this.tx((client) => releaseOwnedBy(client, this.sink, nowIso, null));
  }

  async releaseDead(nowIso: string): Promise<Array<{ id: number; ref: string }>> {
    const perOwner = await releaseDeadPg(this.pool, this.options.leaseOwner, (owner) =>
      this.releaseOwner(owner, nowIso),
    );
    return perOwner.flat().sort((a, b) => a.id - b.id);
  }

  /**
   * Hands back every row `owner` holds (one transaction). Only for an owner known dead: the
   * replica presence's sweep (pgPresence.ts) calls it under that owner's liveness lock.
   */
  releaseOwner(owner: string, nowIso: string): Promise<Array<{ id: number; ref: string }>> {
    return this.tx((client) => releaseOwnedBy(client, this.sink, nowIso, owner));
  }

  recordDecision(d: DecisionRecord): Promise<boolean> {
    return this.tx((client) => recordDecisionPg(client, this.sink, d));
  }

  retryFailed(op: { id: number; ref: string }, nowIso: string): Promise<boolean> {
    return this.moveOne(
      `UPDATE outbox SET state = 'queued', attempts = 0, next_attempt_at = $1, retried_at = $1, finished_at = NULL,
         updated_at = $1 ${where('retry')} AND $2::text IS NULL`,
      [nowIso, null, op.id],
      { ref: op.ref, from: 'failed', to: 'queued', at: nowIso },
    );
  }

  expedite(id: number, nowIso: string): Promise<boolean> {
    return this.moveOne(
      `UPDATE outbox SET next_attempt_at = $1, updated_at = $1 ${where('expedite')} AND $2::text IS NULL`,
      [nowIso, null, id],
      null,
    );
  }

  cancel(op: { id: number; ref: string; from: OperationState }, nowIso: string): Promise<boolean> {
    return this.moveOne(
      `UPDATE outbox SET state = 'cancelled', finished_at = $1, updated_at = $1, ${CLEAR_LEASE}
       ${where('cancel')} AND $2::text IS NULL`,
      [nowIso, null, op.id],
      { ref: op.ref, from: op.from, to: 'cancelled', at: nowIso },
    );
  }

  async nextDueAt(): Promise<string | null> {
    const { rows } = await this.pool.query<{ at: string | null }>(
      `SELECT to_char(MIN(next_attempt_at) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS at
       FROM outbox WHERE state = 'queued'`,
    );
    return rows[0]?.at ?? null;
  }
}

/**
 * The operator's decision on an accepted row, inside the caller's transaction (the inbox records
 * the webhook in the same one); false when the row is not accepted (nothing changes).
 */
export async function recordDecisionPg(
  client: pg.ClientBase,
  sink: StateChangeSink | undefined,
  d: DecisionRecord,
): Promise<boolean> {
  const { rowCount } = await client.query(
    `UPDATE outbox SET state = $4, decision_reason = $5, decided_at = $1, finished_at = $1, updated_at = $1
     ${where('approve')} AND $2::text IS NULL`,
    [d.now, null, d.id, d.decision, d.reason],
  );
  if (!rowCount) return false;
  await stateChangedPg(client, sink, [{ ref: d.ref, from: 'accepted', to: d.decision, at: d.now }]);
  return true;
}

/**
 * Back to the queue, attempt not counted, lease cleared: every claim (owner null) or one owner's.
 * Run inside a transaction.
 */
async function releaseOwnedBy(
  client: pg.ClientBase,
  sink: StateChangeSink | undefined,
  nowIso: string,
  owner: string | null,
): Promise<Array<{ id: number; ref: string }>> {
  const { rows } = await client.query<{ id: number; ref: string }>(
    `UPDATE outbox SET state = 'queued', attempts = GREATEST(0, attempts - 1), updated_at = $1, ${CLEAR_LEASE}
     WHERE state = 'sending' AND ($2::text IS NULL OR lease_owner = $2)
     RETURNING id::float8 AS id, "marketplaceTransactionRef" AS ref`,
    [nowIso, owner],
  );
  rows.sort((a, b) => a.id - b.id);
  await stateChangedPg(
    client,
    sink,
    rows.map((r) => ({ ref: r.ref, from: 'sending', to: 'queued', at: nowIso })),
  );
  return rows;
}
