import type pg from 'pg';
import { inPgTransaction } from '../db/pg.js';
import { iso } from '../operations/pgRows.js';
import type { DeliveriesAccess } from './access.js';
import {
  type DeliveryClaim,
  type DeliveryHead,
  type DeliveryRow,
  deliveryGuards,
  runToClaim,
} from './queries.js';
import type { DeliveryFilter } from './reads.js';
import type { DeliveriesStore, DeliveryRun } from './storeSeam.js';

/**
 * Subscriber deliveries on PostgreSQL, shared by several replicas: the statements of queries.ts
 * with the same guards (every statement binds $1 = now, $2 = owner where it guards on them), each
 * call one transaction of few round trips.
 *
 * Strict id order per subscriber across replicas. The claim reads the subscriber's head (its
 * oldest unsettled rows) and locks those rows FOR UPDATE SKIP LOCKED in one statement: a row it
 * cannot lock is another claimer's, and it stops there, as it stops at a row leased to another
 * live owner (read under the lock, so as it stands now, not as the snapshot saw it). Rows are
 * then claimed only as the unbroken run from the head (queries.ts runToClaim), so nothing goes
 * ahead of an older unsettled row. What the snapshot must not miss is an OLDER row not committed
 * yet: writers take the feed's lock before inserting deliveries (operations/pgRows.ts), so ids
 * are handed out in commit order.
 */

const G = deliveryGuards({ now: '$1::timestamptz', owner: '$2' });

/** Columns of `DeliveryRow`, times as SQLite's ISO text, so entries print the same bytes on both. */
const COLUMNS = [
  'id::float8 AS id',
  'subscriber',
  'event_type',
  'ref',
  'webhook_id',
  'body',
  'state',
  'attempts',
  `${iso('next_attempt_at')} AS next_attempt_at`,
  'lease_owner',
  `${iso('lease_until')} AS lease_until`,
  'last_error',
  'last_status',
  `${iso('created_at')} AS created_at`,
  `${iso('updated_at')} AS updated_at`,
  `${iso('delivered_at')} AS delivered_at`,
  `${iso('dead_at')} AS dead_at`,
  `${iso('redriven_at')} AS redriven_at`,
].join(', ');

const CLEAR_LEASE = 'lease_owner = NULL, lease_until = NULL';

/** The head, each row as it stands under this claim's lock (null columns: locked by another claimer). */
const HEAD_SQL = `
  WITH head AS (
    SELECT id FROM deliveries WHERE subscriber = $1 AND ${G.unsettled} ORDER BY id LIMIT $2
  ), locked AS MATERIALIZED (
    SELECT id, state, attempts, ${iso('next_attempt_at')} AS next_attempt_at, ${iso('lease_until')} AS lease_until
    FROM deliveries WHERE id IN (SELECT id FROM head) AND ${G.unsettled}
    FOR UPDATE SKIP LOCKED
  )
  SELECT head.id::float8 AS id, locked.state, locked.attempts, locked.next_attempt_at, locked.lease_until
  FROM head LEFT JOIN locked ON locked.id = head.id ORDER BY head.id`;

const CLAIM_SQL = `
  UPDATE deliveries SET state = 'sending', attempts = attempts + 1, lease_owner = $2, lease_until = $3::timestamptz,
    updated_at = $1::timestamptz
  WHERE id = ANY($4::bigint[]) AND ${G.claim}
  RETURNING ${COLUMNS}`;

/** A run's outcomes (one row each, from unnest) and its unsent rows back, in one statement. */
const SETTLE_SQL = `
  WITH released AS (
    UPDATE deliveries SET state = 'pending', attempts = GREATEST(0, attempts - 1), updated_at = $1::timestamptz,
      ${CLEAR_LEASE}
    WHERE id = ANY($3::bigint[]) AND ${G.held}
    RETURNING id
  )
  UPDATE deliveries d SET state = v.st, last_status = v.status, last_error = v.error,
    next_attempt_at = COALESCE(v.next, d.next_attempt_at),
    delivered_at = CASE WHEN v.st = 'delivered' THEN v.at ELSE d.delivered_at END,
    dead_at = CASE WHEN v.st = 'dead' THEN v.at ELSE d.dead_at END,
    updated_at = v.at, ${CLEAR_LEASE}
  FROM unnest($4::bigint[], $5::text[], $6::int[], $7::text[], $8::timestamptz[], $9::timestamptz[])
    AS v(id, st, status, error, next, at)
  WHERE d.id = v.id AND ${G.held}`;

const RELEASE_SQL = `UPDATE deliveries SET state = 'pending', attempts = GREATEST(0, attempts - 1), updated_at = $1::timestamptz, ${CLEAR_LEASE}`;

export class PgDeliveriesStore implements DeliveriesStore {
  /** Settles not yet committed: a claim waits for them (see DeliveriesStore). */
  private readonly settling = new Set<Promise<unknown>>();

  constructor(private readonly pool: pg.Pool) {}

  async claim(given: DeliveryClaim | (() => DeliveryClaim)): Promise<DeliveryRow[]> {
    if (this.settling.size > 0) await Promise.allSettled([...this.settling]);
    return inPgTransaction(this.pool, async (client) => {
      const c = typeof given === 'function' ? given() : given;
      const head = await client.query<{
        id: number;
        state: string | null;
        attempts: number | null;
        next_attempt_at: string | null;
        lease_until: string | null;
      }>(HEAD_SQL, [c.subscriber, c.limit]);
      const ids = runToClaim(
        head.rows.map((r) => ({
          id: r.id,
          attempts: r.attempts ?? 0,
          head: r.state === null ? null : (r as DeliveryHead),
        })),
        c.now,
      );
      if (ids.length === 0) return [];
      const { rows } = await client.query<DeliveryRow>(CLAIM_SQL, [c.now, c.owner, c.leaseUntil, ids]);
      return rows.sort((a, b) => a.id - b.id);
    });
  }

  settle(run: DeliveryRun): Promise<void> {
    if (run.settled.length === 0 && run.unsent.length === 0) return Promise.resolve();
    const s = run.settled;
    const done = this.pool
      .query(SETTLE_SQL, [
        run.now,
        run.owner,
        run.unsent,
        s.map((d) => d.id),
        s.map((d) => d.step.to),
        s.map((d) => d.step.status),
        s.map((d) => (d.step.to === 'delivered' ? null : d.step.error)),
        s.map((d) => (d.step.to === 'pending' ? d.step.nextAttemptAt : null)),
        s.map((d) => d.now),
      ])
      .then(() => undefined);
    this.settling.add(done);
    void done.catch(() => {}).finally(() => this.settling.delete(done));
    return done;
  }

  async release(d: { id: number; owner: string; now: string }): Promise<boolean> {
    const { rowCount } = await this.pool.query(`${RELEASE_SQL} WHERE id = $3 AND ${G.held}`, [
      d.now,
      d.owner,
      d.id,
    ]);
    return (rowCount ?? 0) > 0;
  }

  async releaseAll(nowIso: string): Promise<number> {
    return (await this.pool.query(`${RELEASE_SQL} WHERE ${G.claimed}`, [nowIso])).rowCount ?? 0;
  }

  async releaseOwner(owner: string, nowIso: string): Promise<number> {
    return (await this.pool.query(`${RELEASE_SQL} WHERE ${G.held}`, [nowIso, owner])).rowCount ?? 0;
  }

  async nextDue(subscriber: string): Promise<string | null> {
    const { rows } = await this.pool.query<{ at: string | null }>(
      `SELECT ${iso(`CASE WHEN state = 'pending' THEN next_attempt_at ELSE lease_until END`)} AS at
       FROM deliveries WHERE subscriber = $1 AND ${G.unsettled} ORDER BY id LIMIT 1`,
      [subscriber],
    );
    return rows[0]?.at ?? null;
  }

  onEnqueued(): void {
    // Other processes write deliveries too: the dispatcher's wakeOn signal (the change feed) wakes it.
  }
}

/** Reads and steering of deliveries on PostgreSQL (the routes' and `vcu-sync deliveries`'). */
export function pgDeliveriesAccess(pool: pg.Pool): DeliveriesAccess {
  return {
    async list(f: DeliveryFilter) {
      const { rows } = await pool.query<DeliveryRow>(
        `SELECT ${COLUMNS} FROM deliveries
         WHERE ($1::text IS NULL OR state = $1) AND ($2::text IS NULL OR subscriber = $2) AND id > $3
         ORDER BY id LIMIT $4`,
        [f.state ?? null, f.subscriber ?? null, f.after ?? 0, f.limit],
      );
      return rows;
    },
    async get(id: number) {
      const { rows } = await pool.query<DeliveryRow>(`SELECT ${COLUMNS} FROM deliveries WHERE id = $1`, [id]);
      return rows[0];
    },
    async retry(id: number, nowIso: string) {
      const { rows } = await pool.query<DeliveryRow>(
        `UPDATE deliveries SET state = 'pending', attempts = CASE WHEN state = 'dead' THEN 0 ELSE attempts END,
           next_attempt_at = $1::timestamptz,
           redriven_at = CASE WHEN state = 'dead' THEN $1::timestamptz ELSE redriven_at END,
           dead_at = NULL, updated_at = $1::timestamptz
         WHERE id = $2 AND ${G.retry} RETURNING ${COLUMNS}`,
        [nowIso, id],
      );
      return rows[0];
    },
    async redrive(p: { since: string; subscriber: string | null; now: string }) {
      const { rows } = await pool.query<{ id: number }>(
        `UPDATE deliveries SET state = 'pending', attempts = 0, next_attempt_at = $1::timestamptz,
           redriven_at = $1::timestamptz, dead_at = NULL, updated_at = $1::timestamptz
         WHERE ${G.redrive} AND dead_at >= $2::timestamptz AND ($3::text IS NULL OR subscriber = $3)
         RETURNING id::float8 AS id`,
        [p.now, p.since, p.subscriber],
      );
      return rows.map((r) => r.id).sort((a, b) => a - b);
    },
  };
}
