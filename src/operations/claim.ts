import { UNSENT_SQL } from '../db/schema/operationStates.js';
import { all, first, type Script } from '../store/script.js';
import { indexedBy, join, limitRows, raw, sql, typed } from '../store/sql.js';
import type { StateChange, StateChangeSink } from './effects.js';
import { eventAppliesSql, guardSql, type OperationRow, OUTBOX_ROW_LOCK } from './rows.js';
import { shaped, shapedPerLimit } from './shaped.js';
import { stateChanged } from './stateChanged.js';
import { fromStates, type OperationState } from './states.js';
import type { ClaimParams } from './storeSeam.js';
import { bound, moveRow, OUTBOX_ROW, ROW } from './transitions.js';

/**
 * The claim, the one transition whose statements differ by store (transitions.ts holds the rest):
 * where one process owns the store (SQLite) candidates are read per from-state and taken one by
 * one; where processes share it (PostgreSQL) one statement locks and takes them, reading the queue
 * in id order or, when few keys are free, by key. All take the same SET list and the transition
 * table's guards, and find the same rows: a key's oldest unsent row, when it is due.
 */

/** What a claim sets: the lease, one attempt more. */
const claimSet = (p: Readonly<Record<'owner' | 'now' | 'leaseUntil', unknown>>) =>
  sql`state = 'sending', lease_owner = ${p.owner}, lease_until = ${typed(p.leaseUntil, 'timestamptz')},
    attempts = attempts + 1, updated_at = ${typed(p.now, 'timestamptz')}`;

/**
 * Claimable: no older row of the same order key is unsent. One probe of the partial index
 * `outbox_unsettled_key_idx`, which holds only unsent rows (its condition is this test's own
 * {@link UNSENT_SQL}, so both planners take it): a key's settled history is not read. Over the full
 * `(order_key, id)` index this index replaced, each claim of a key's next row walked that history,
 * so a claim cost grew with every operation its unit had ever had: on PostgreSQL 0.8 ms per claim
 * after 40 settled rows a key, 1.9 ms after 400 (test/postgres/pgClaimPlan.test.ts).
 */
const READY = raw(`(o.order_key IS NULL OR NOT EXISTS (
      SELECT 1 FROM outbox p
      WHERE p.order_key = o.order_key AND p.id < o.id AND p.state IN ${UNSENT_SQL}))`);

/** {@link UNSENT_SQL} as a fragment. */
const UNSENT = raw(UNSENT_SQL);

/** `column` of the unsent rows, on the partial index in (unit, id) order (to be completed and limited). */
const unsentRows = (column: 'order_key' | 'id') =>
  sql`SELECT ${raw(column)} FROM outbox ${indexedBy('outbox_unsettled_key_idx')} WHERE state IN ${UNSENT}`;

/**
 * The CTEs `keys` and `heads` (to follow `WITH`): every order key with an unsent row, by a skip scan
 * of `outbox_unsettled_key_idx` (one probe per key), and each key's oldest unsent row, with the
 * unsent rows of no key. A row is claimable exactly when it is among the heads and due: both
 * stores' claims by key read the queue through this.
 */
const KEY_HEADS = sql`RECURSIVE keys(k) AS (
      SELECT (${unsentRows('order_key')} AND order_key IS NOT NULL ORDER BY order_key LIMIT 1)
      UNION ALL
      SELECT (${unsentRows('order_key')} AND order_key > keys.k ORDER BY order_key LIMIT 1)
      FROM keys WHERE keys.k IS NOT NULL),
    heads(id) AS (
      SELECT (${unsentRows('id')} AND order_key = keys.k ORDER BY order_key, id LIMIT 1)
      FROM keys WHERE keys.k IS NOT NULL
      UNION ALL
      ${unsentRows('id')} AND order_key IS NULL)`;

/**
 * Claims up to `limit` claimable rows for a store one process owns (SQLite): per from-state a
 * SELECT walking outbox_state_id_idx in id order, at most {@link WALK_ROWS} rows, and asking each
 * unit when that comes up short (a single OR over both states made SQLite sort every due row on
 * every claim); then a compare-and-swap UPDATE per id. Split rather than one UPDATE ... FROM
 * candidates: that form cost ~150 us per claim against ~85 us split, and a claim runs once per
 * sent row. `INDEXED BY` is SQLite's: where processes share
 * the store the claim is {@link claimShared}.
 */
function* claimOneByOne(p: ClaimParams, sink: StateChangeSink | undefined): Script<OperationRow[]> {
  const found: Array<{ id: number; from: OperationState }> = [];
  for (const { from, walk, walkCut, heads } of CLAIM_CANDIDATES) {
    let ids = (yield* all<{ id: number }>(walk(p.limit)(p))).map((r) => r.id);
    if (ids.length < p.limit && ((yield* first<{ n: number }>(walkCut))?.n ?? 0) > WALK_ROWS)
      ids = (yield* all<{ id: number }>(heads(p.limit)(p))).map((r) => r.id);
    for (const id of ids) found.push({ id, from });
  }
  found.sort((a, b) => a.id - b.id);
  const rows: OperationRow[] = [];
  const changes: StateChange[] = [];
  for (const { id, from } of found.slice(0, p.limit)) {
    const row = yield* first<OperationRow>(CLAIM_ROW({ ...p, id }));
    if (!row) continue;
    rows.push(row);
    changes.push({ ref: row.marketplaceTransactionRef, from, to: 'sending', at: p.now });
  }
  yield* stateChanged(changes, sink);
  return rows;
}

/**
 * Rows of a from-state {@link claimOneByOne} walks in id order before it asks each unit for its
 * oldest unsent row instead. Walking on until `limit` claimable rows turned up read every queued
 * row whenever fewer units than that were free: 10,000 operations on 3 units drained at 660 a
 * second, 9 of its 15 s in the claim (docs/benchmarks.md). Past this many, one probe per unit.
 */
export const WALK_ROWS = 256;

/**
 * {@link claimOneByOne}'s candidates per from-state, the oldest `limit` claimable rows of each: of
 * the first {@link WALK_ROWS} rows in the state, those claimable ({@link READY}); when those are
 * fewer than asked and the state has more rows (`walkCut`), instead every unit's oldest unsent row
 * that is in the state and due (a skip scan of `outbox_unsettled_key_idx`, one probe per unit: a
 * row is claimable exactly when it is its unit's oldest unsent row), with the rows of no unit.
 */
const CLAIM_CANDIDATES = fromStates('claim').map(({ from, when }) => {
  const state = raw(`'${from}'`);
  const due = (now: unknown) => (when ? sql` AND ${guardSql(when, bound(now), 'o.')}` : raw(''));
  return {
    from,
    // The walk's rows come from a subquery SQLite runs as a co-routine, in the index's id order
    // (no sort: test/operations/claimOrder.test.ts asserts the plan), and the outer query stops
    // at `limit` claimable rows. Bounding the walk instead by the id of the state's row just past
    // it (`LIMIT 1 OFFSET 255`) read 256 index entries on every claim: 21 us a claim against 15
    // with 10,000 queued. The subquery carries the columns the guards and READY read.
    walk: shapedPerLimit((limit) =>
      shaped<'now'>(
        (v) => sql`
      SELECT o.id FROM (
          SELECT id, order_key, next_attempt_at, lease_until, lease_owner
          FROM outbox INDEXED BY outbox_state_id_idx
          WHERE state = ${state} ORDER BY id ${limitRows(WALK_ROWS)}) AS o
      WHERE 1${due(v.now)} AND ${READY}
      ORDER BY o.id ${limitRows(limit)}`,
      ),
    ),
    walkCut: sql`SELECT count(*) AS n FROM (
        SELECT 1 FROM outbox INDEXED BY outbox_state_id_idx
        WHERE state = ${state} ${limitRows(WALK_ROWS + 1)})`,
    heads: shapedPerLimit((limit) =>
      shaped<'now'>(
        (v) => sql`
      WITH ${KEY_HEADS}
      SELECT o.id FROM heads CROSS JOIN outbox o ON o.id = heads.id
      WHERE o.state = ${state}${due(v.now)}
      ORDER BY o.id ${limitRows(limit)}`,
      ),
    ),
  };
});

/** {@link claimOneByOne}'s compare-and-swap of one candidate. */
const CLAIM_ROW = shaped<'id' | 'owner' | 'now' | 'leaseUntil'>(
  (v) => sql`${moveRow(v.id, 'claim', claimSet(v), bound(v.now, v.owner))} RETURNING ${ROW}`,
);

/**
 * A row the shared claim took, with the state it left; read by key ({@link claimSharedHeads}), also
 * how many keys' heads were claimable, this row's among them.
 */
export type ClaimedRow = OperationRow & { from_state: OperationState; free_heads?: number };

/**
 * The claim where several processes share the store (PostgreSQL), as ONE statement: per from-state
 * a branch walking the `(state, id)` index in order and locking up to `limit` rows SKIP LOCKED,
 * then the `limit` oldest of them, then the guarded UPDATE. One scan in id order with the guards'
 * OR as a filter steps over every settled row before the first queued one, so a claim's cost grew
 * with the outbox's history. The state is a range (`BETWEEN s AND s`) and the order `(state, id)`
 * on purpose: with `=` the planner may still walk the primary key. A branch's rows that miss the
 * cut stay locked, unclaimed, until this short transaction commits. Why concurrent claimers cannot
 * take two rows of one key: src/postgres/operationsStore.ts. Unlike {@link claimOneByOne}'s, this
 * walk is not bounded: with fewer units free than `limit` it reads every queued row, so after such
 * a claim the next ones ask each key instead ({@link claimSharedHeads}, {@link nextClaimForm}).
 */
export const claimShared = shaped<keyof ClaimParams>((p) => {
  const guard = bound(p.now, p.owner);
  const branches = fromStates('claim').map(({ from, when }, i) => {
    const due = when ? sql` AND ${guardSql(when, guard, 'o.')}` : raw('');
    return sql`${raw(`from_${i}`)} AS (
      SELECT o.id, o.state AS from_state FROM outbox o
      WHERE o.state BETWEEN ${raw(`'${from}' AND '${from}'`)}${due} AND ${READY}
      ORDER BY o.state, o.id LIMIT ${p.limit}
      ${raw(OUTBOX_ROW_LOCK)} SKIP LOCKED)`;
  });
  const union = raw(branches.map((_, i) => `SELECT * FROM from_${i}`).join(' UNION ALL '));
  return sql`
    WITH ${join(branches, ',\n')},
    candidates AS (SELECT id, from_state FROM (${union}) AS b ORDER BY id LIMIT ${p.limit})
    UPDATE outbox SET ${claimSet(p)}
    FROM candidates c
    WHERE outbox.id = c.id AND ${eventAppliesSql('claim', guard, 'outbox.')}
    RETURNING ${OUTBOX_ROW}, c.from_state`;
});

/**
 * {@link claimShared} read through each order key's oldest unsent row rather than the queue in id
 * order: a skip scan of `outbox_unsettled_key_idx` (one probe per key), with the rows of no key;
 * each head that passes the claim's guards and order test locked SKIP LOCKED, the oldest `limit` of
 * them taken. The walk reads every queued row when fewer keys are free than `limit` (5,000
 * operations on 3 units drained at 228-245 a second through `vcu-sync run`, 858-936 by key); this
 * reads one row per key, so it is the form for few keys, and the walk for many. A key's head is
 * claimable exactly when it is due, so both forms claim the same rows
 * (test/postgres/pgClaimHeads.test.ts); {@link nextClaimForm} picks one per claim.
 */
export const claimSharedHeads = shaped<keyof ClaimParams>((p) => {
  const guard = bound(p.now, p.owner);
  // Each head is locked through the primary key, one probe per head (LATERAL): given the heads as a
  // set, the planner walked a state's index or the partial index instead, reading every unsent row.
  // Every claimable head is locked, not `limit` of them: in the form for few keys, a few rows. The
  // UPDATE takes the rows so locked by id alone: their guards were checked on their newest version
  // as they were locked (a locking read re-checks them), and nothing else can move them until commit;
  // the guards written again there let the planner read the partial index in full.
  return sql`
    WITH ${KEY_HEADS},
    locked AS (
      SELECT l.id, l.from_state FROM heads h CROSS JOIN LATERAL (
        SELECT o.id, o.state AS from_state FROM outbox o
        WHERE o.id = h.id AND ${eventAppliesSql('claim', guard, 'o.')} AND ${READY}
        ${raw(OUTBOX_ROW_LOCK)} SKIP LOCKED) l),
    candidates AS (SELECT id, from_state FROM locked ORDER BY id LIMIT ${p.limit})
    UPDATE outbox SET ${claimSet(p)}
    FROM candidates c
    WHERE outbox.id = c.id
    RETURNING ${OUTBOX_ROW}, c.from_state, (SELECT count(*) FROM locked) AS free_heads`;
});

/** How a shared claim reads the queue: in id order ({@link claimShared}) or by key ({@link claimSharedHeads}). */
export type ClaimForm = 'walk' | 'heads';

/** The statement of a shared claim in `form`. */
export const sharedClaimIn = (form: ClaimForm) => (form === 'heads' ? claimSharedHeads : claimShared);

/**
 * The form of the next shared claim, after one in `form` asked for `asked` rows and found `free`
 * claimable (a walk: the rows it got; by key: every free key's head, of which it took `asked`). A
 * walk that came up short read every queued row to find too few: fewer keys are free than asked,
 * so the next claim asks each key. Only a claim by key that found more free keys than it asked for
 * walks again (each claim by key locks every free head): going back on merely getting what it asked
 * for, a claim of one row at a time behind few keys went back and forth, a full walk every other time.
 */
export function nextClaimForm(form: ClaimForm, asked: number, free: number): ClaimForm {
  if (form === 'walk') return free < asked ? 'heads' : 'walk';
  return free > asked ? 'walk' : 'heads';
}

/** The state changes of rows a shared claim took, at `now`. */
export function claimChanges(rows: readonly ClaimedRow[], now: string): StateChange[] {
  return rows.map((r) => ({ ref: r.marketplaceTransactionRef, from: r.from_state, to: 'sending', at: now }));
}

/** Claims by the form the store calls for (see {@link claimOneByOne}, {@link claimShared}). */
export function* claimOperations(
  given: ClaimParams | (() => ClaimParams),
  sink: StateChangeSink | undefined,
  shared: boolean,
): Script<OperationRow[]> {
  // Taken now, inside the transaction: it may have waited for a lock or a connection.
  const p = typeof given === 'function' ? given() : given;
  if (!shared) return yield* claimOneByOne(p, sink);
  const rows = (yield* all<ClaimedRow>(claimShared(p))).sort((a, b) => a.id - b.id);
  yield* stateChanged(claimChanges(rows, p.now), sink);
  return rows.map(({ from_state: _, ...row }) => row);
}
