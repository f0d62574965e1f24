import { all, run, type Script } from '../store/script.js';
import { greatest, indexedBy, join, raw, type Sql, sql, typed, whenShared } from '../store/sql.js';
import type { StateChange, StateChangeSink } from './effects.js';
import { insertLedger, type LedgerInsert } from './ledger.js';
import { eventAppliesSql, type GuardValues, type OperationRow, OUTBOX_COLUMNS } from './rows.js';
import { shaped } from './shaped.js';
import { stateChanged } from './stateChanged.js';
import type { OperationState } from './states.js';
import type {
  AttemptRecord,
  Claim,
  DecisionRecord,
  NewOperation,
  ScrubbedTexts,
  SettleStep,
} from './storeSeam.js';

/**
 * Every statement that changes an `outbox` or `outbox_attempts` row, written once for both stores
 * (store/sql.ts renders them per dialect), and nothing else writes those tables. Each `WHERE state
 * ...` is derived from the transition table (states.ts), so the compare-and-swap refuses whatever
 * the table refuses, even against another process; every state change passes through
 * stateChanged.ts in the transaction that makes it. Scripts (store/script.ts): the SQLite adapter
 * drives them synchronously inside its group commit, the PostgreSQL one with awaits.
 */

/** The outbox's columns in the table's order (rows.ts), camelCase ones quoted: PostgreSQL folds the rest. */
const OPERATION_COLUMNS = OUTBOX_COLUMNS.map((c) => (/[A-Z]/.test(c) ? `"${c}"` : c));

/** The row as `OperationRow`, bare (`RETURNING` of one table) or through `outbox.` (beside a join). */
export const ROW = raw(OPERATION_COLUMNS.join(', '));
export const OUTBOX_ROW = raw(OPERATION_COLUMNS.map((c) => `outbox.${c}`).join(', '));

/**
 * How long a release (or a settle, pgGroup.ts) waits for a row another transaction holds, where
 * processes share the store (ms). Concurrent claims hold rows for a moment, which a wait this long
 * outlasts; a transaction left idle after updating outbox rows must not hold the dispatcher.
 */
export const ROW_LOCK_TIMEOUT_MS = 200;

const CLEAR_LEASE = raw('lease_owner = NULL, lease_until = NULL');

/** The guards' values of one row's move. */
export const bound = (now: unknown, owner: unknown = null): GuardValues => ({
  now: sql`${typed(now, 'timestamptz')}`,
  owner: sql`${owner}`,
});

/** A guarded UPDATE of one row: `set` applies where the transition table lets `event` move it. */
export const moveRow = (
  id: unknown,
  event: Parameters<typeof eventAppliesSql>[0],
  set: Sql,
  guard: GuardValues,
) => sql`UPDATE outbox SET ${set} WHERE id = ${id} AND ${eventAppliesSql(event, guard)}`;

/** One guarded move and its state change (none: a move with no change of state), in one script. */
function* moved(
  statement: Sql,
  change: StateChange | null,
  sink: StateChangeSink | undefined,
): Script<boolean> {
  const { rowCount } = yield* run(statement);
  if (rowCount === 0) return false;
  if (change) yield* stateChanged([change], sink);
  return true;
}

/** Rows per INSERT statement: well under either store's bound on a statement's values. */
const INSERT_BATCH = 500;

/** The ledger entries of the rows a batch inserted, of the operations that carry one (a repeat inserts no row). */
function ledgerEntries(ops: readonly NewOperation[], inserted: readonly OperationRow[]): LedgerInsert[] {
  const byRef = new Map(ops.map((o) => [o.ref, o.ledger]));
  const entries: LedgerInsert[] = [];
  for (const row of inserted) {
    const ledger = byRef.get(row.marketplaceTransactionRef);
    if (ledger) entries.push({ outboxId: Number(row.id), ...ledger });
  }
  return entries;
}

/**
 * Queues new operations; a ref already queued is left as it is and not returned. Where processes
 * share the store, the adapter takes each order key's lock first (postgres/operationsStore.ts says
 * why). Each inserted row's ledger entry, where the operation carries one, is written with it
 * (ledger.ts).
 */
export function* insertOperations(
  ops: readonly NewOperation[],
  nowIso: string,
  sink: StateChangeSink | undefined,
): Script<OperationRow[]> {
  const now = typed(nowIso, 'timestamptz');
  const rows: OperationRow[] = [];
  for (let i = 0; i < ops.length; i += INSERT_BATCH) {
    const batch = ops.slice(i, i + INSERT_BATCH);
    const values = batch.map(
      (o) =>
        sql`(${o.ref}, ${o.operationType}, ${o.orderKey}, ${o.body}, ${o.hash}, 'queued', 0, ${now}, ${now}, ${now})`,
    );
    const inserted = yield* all<OperationRow>(sql`
        INSERT INTO outbox ("marketplaceTransactionRef", "operationType", order_key, body, body_hash, state, attempts,
                            next_attempt_at, created_at, updated_at)
        VALUES ${join(values, ', ')}
        ON CONFLICT ("marketplaceTransactionRef") DO NOTHING
        RETURNING ${ROW}`);
    const entries = ledgerEntries(batch, inserted);
    if (entries.length > 0) yield* run(insertLedger(entries));
    rows.push(...inserted);
  }
  rows.sort((a, b) => a.id - b.id);
  const changes = rows.map(
    (r): StateChange => ({ ref: r.marketplaceTransactionRef, from: null, to: 'queued', at: nowIso }),
  );
  yield* stateChanged(changes, sink);
  return rows;
}

/** The event each settle step is. */
export const SETTLE_EVENT = { accepted: 'accept', failed: 'fail', queued: 'requeue' } as const;

/** A settle's values, bound (one row) or columns of a batch (`s.text`). */
export interface SettleValues {
  now: Sql;
  /** The accepted step's response, else the error. */
  text: Sql;
  status: Sql;
  next: Sql;
  /** 1 when the attempt is not counted, else 0. */
  refund: Sql;
}

/** What a settle step sets, the lease cleared. */
export function settleSet(to: SettleStep['to'], v: SettleValues): Sql {
  const set =
    to === 'accepted'
      ? sql`state = 'accepted', response = ${v.text}, last_status = ${v.status}, last_error = NULL, accepted_at = ${v.now}`
      : to === 'failed'
        ? sql`state = 'failed', last_error = ${v.text}, last_status = ${v.status}, finished_at = ${v.now}`
        : sql`state = 'queued', next_attempt_at = ${v.next}, last_error = ${v.text}, last_status = ${v.status},
            attempts = ${greatest(raw('0'), sql`attempts - ${v.refund}`)}`;
  return sql`${set}, updated_at = ${v.now}, ${CLEAR_LEASE}`;
}

/** One attempt in the attempt log. */
const INSERT_ATTEMPT = shaped<'id' | 'startedAt' | 'durationMs' | 'statusCode' | 'error'>(
  (v) => sql`
    INSERT INTO outbox_attempts (outbox_id, started_at, duration_ms, status_code, error)
    VALUES (${v.id}, ${v.startedAt}, ${v.durationMs}, ${v.statusCode}, ${v.error})`,
);

type SettleSlot = 'id' | 'owner' | 'now' | 'text' | 'status' | 'next' | 'refund';

/** One row's settle per step: the SET list and guards of {@link settleSet}, bound. */
const SETTLE_ROW = Object.fromEntries(
  (['accepted', 'failed', 'queued'] as const).map((to) => [
    to,
    shaped<SettleSlot>((v) => {
      const values = {
        now: sql`${typed(v.now, 'timestamptz')}`,
        text: sql`${v.text}`,
        status: sql`${v.status}`,
        next: sql`${typed(v.next, 'timestamptz')}`,
        refund: sql`${typed(v.refund, 'int4')}`,
      };
      return moveRow(v.id, SETTLE_EVENT[to], settleSet(to, values), bound(v.now, v.owner));
    }),
  ]),
) as Record<SettleStep['to'], (values: Readonly<Record<SettleSlot, unknown>>) => Sql>;

/** One settle: the claim that sent the row, the attempt to log, the step to move the row to. */
export interface SettleCall {
  claim: Claim;
  attempt: AttemptRecord;
  step: SettleStep;
}

/**
 * Logs the attempt and moves its row to `step`, if `claim.owner` still holds the lease; false
 * when it does not (another claimant took the row over and settles it).
 */
export function* settleAttempt(
  claim: Claim,
  attempt: AttemptRecord,
  step: SettleStep,
  sink: StateChangeSink | undefined,
): Script<boolean> {
  const [moved] = yield* settleAttempts([{ claim, attempt, step }], sink);
  return moved === true;
}

/**
 * Several settles in one script, each as {@link settleAttempt} does it, their state changes passed
 * on together: one feed append and one call of the sink for the lot (SQLite's dispatcher settles
 * the sends answered in one turn so, sqlite/operationsStore.ts). Per call, whether it moved its row.
 */
export function* settleAttempts(
  calls: readonly SettleCall[],
  sink: StateChangeSink | undefined,
): Script<boolean[]> {
  const moved: boolean[] = [];
  const changes: StateChange[] = [];
  for (const { claim, attempt, step } of calls) {
    yield* run(INSERT_ATTEMPT({ id: claim.id, ...attempt }));
    const { rowCount } = yield* run(
      SETTLE_ROW[step.to]({
        id: claim.id,
        owner: claim.owner,
        now: claim.now,
        text: step.to === 'accepted' ? step.response : step.error,
        status: step.status,
        next: step.to === 'queued' ? step.nextAttemptAt : null,
        refund: step.to === 'queued' && step.refund ? 1 : 0,
      }),
    );
    moved.push(rowCount > 0);
    if (rowCount > 0) changes.push({ ref: claim.ref, from: 'sending', to: step.to, at: claim.now });
  }
  yield* stateChanged(changes, sink);
  return moved;
}

/** Back to the queue as it was before the claim: the attempt that never got an answer does not count. */
const releaseSet = (nowIso: string) =>
  sql`state = 'queued', attempts = ${greatest(raw('0'), raw('attempts - 1'))}, updated_at = ${typed(nowIso, 'timestamptz')}, ${CLEAR_LEASE}`;

/** Hands a claimed row back unsent (attempt not counted); false when the lease was lost meanwhile. */
export function* releaseClaim(claim: Claim, sink: StateChangeSink | undefined): Script<boolean> {
  // A row another process holds fails fast: its lease runs out and it is claimed again.
  yield* run(whenShared(raw(`SET LOCAL lock_timeout = ${ROW_LOCK_TIMEOUT_MS}`)));
  const statement = moveRow(claim.id, 'release', releaseSet(claim.now), bound(claim.now, claim.owner));
  const done = yield* moved(
    statement,
    { ref: claim.ref, from: 'sending', to: 'queued', at: claim.now },
    sink,
  );
  yield* run(whenShared(raw('SET LOCAL lock_timeout TO DEFAULT')));
  return done;
}

/**
 * Hands back the claimed rows of `owner` (null: every claim, whoever holds it), attempt not
 * counted: only for claimants known dead (the daemon owning a SQLite file at start-up; a replica
 * whose liveness lock is free). Returns the rows released, by id.
 */
export function* releaseOwnedBy(
  owner: string | null,
  nowIso: string,
  sink: StateChangeSink | undefined,
): Script<Array<{ id: number; ref: string }>> {
  const whose = owner === null ? raw('') : sql` AND lease_owner = ${owner}`;
  const rows = yield* all<{ id: number; ref: string }>(
    sql`UPDATE outbox SET ${releaseSet(nowIso)} WHERE state = 'sending'${whose}
        RETURNING id, "marketplaceTransactionRef" AS ref`,
  );
  rows.sort((a, b) => a.id - b.id);
  yield* stateChanged(
    rows.map((r) => ({ ref: r.ref, from: 'sending', to: 'queued', at: nowIso })),
    sink,
  );
  return rows;
}

/** The operator's decision on an accepted row; false when the row is not accepted (nothing changes). */
export function decide(d: DecisionRecord, sink: StateChangeSink | undefined): Script<boolean> {
  const now = typed(d.now, 'timestamptz');
  // approve and reject leave the same state; the table says which.
  const set = sql`state = ${d.decision}, decision_reason = ${d.reason}, decided_at = ${now}, finished_at = ${now}, updated_at = ${now}`;
  return moved(
    moveRow(d.id, 'approve', set, bound(d.now)),
    { ref: d.ref, from: 'accepted', to: d.decision, at: d.now },
    sink,
  );
}

/** A failed row back to the queue, attempts reset, its age counted from now; false unless it was failed. */
export function retryFailed(
  op: { id: number; ref: string },
  nowIso: string,
  sink: StateChangeSink | undefined,
): Script<boolean> {
  const now = typed(nowIso, 'timestamptz');
  const set = sql`state = 'queued', attempts = 0, next_attempt_at = ${now}, retried_at = ${now}, finished_at = NULL, updated_at = ${now}`;
  return moved(
    moveRow(op.id, 'retry', set, bound(nowIso)),
    { ref: op.ref, from: 'failed', to: 'queued', at: nowIso },
    sink,
  );
}

/** A queued row waiting out its backoff made due now (no state change); false unless it was queued. */
export function expedite(id: number, nowIso: string): Script<boolean> {
  const now = typed(nowIso, 'timestamptz');
  return moved(
    moveRow(id, 'expedite', sql`next_attempt_at = ${now}, updated_at = ${now}`, bound(nowIso)),
    null,
    undefined,
  );
}

/**
 * Cancels a row the operator has not accepted (queued, failed, or sending under a dead lease);
 * false when the table refuses it in its current state. `from` is the state the caller read.
 */
export function cancelOperation(
  op: { id: number; ref: string; from: OperationState },
  nowIso: string,
  sink: StateChangeSink | undefined,
): Script<boolean> {
  const now = typed(nowIso, 'timestamptz');
  const set = sql`state = 'cancelled', finished_at = ${now}, updated_at = ${now}, ${CLEAR_LEASE}`;
  return moved(
    moveRow(op.id, 'cancel', set, bound(nowIso)),
    { ref: op.ref, from: op.from, to: 'cancelled', at: nowIso },
    sink,
  );
}

/**
 * Stores the scrubbed texts of a batch of rows and stamps `scrubbed_at` (no state change), one
 * statement for the rows and one for their attempts' errors; returns how many rows changed.
 */
export function* scrubOperations(rows: readonly ScrubbedTexts[], nowIso: string): Script<number> {
  if (rows.length === 0) return 0;
  const now = typed(nowIso, 'timestamptz');
  const texts = rows.map(
    (r) =>
      sql`(${typed(r.id, 'int8')}, ${typed(r.body, 'text')}, ${typed(r.response, 'text')}, ${typed(r.lastError, 'text')}, ${typed(r.decisionReason, 'text')})`,
  );
  const { rowCount } = yield* run(sql`
    WITH s(id, body, response, last_error, decision_reason) AS (VALUES ${join(texts, ', ')})
    UPDATE outbox SET body = s.body, response = s.response, last_error = s.last_error,
      decision_reason = s.decision_reason, scrubbed_at = ${now}, updated_at = ${now}
    FROM s WHERE outbox.id = s.id AND outbox.scrubbed_at IS NULL`);
  const errors = rows
    .flatMap((r) => r.attemptErrors)
    .map((a) => sql`(${typed(a.id, 'int8')}, ${typed(a.error, 'text')})`);
  if (errors.length > 0)
    yield* run(sql`
      WITH s(id, error) AS (VALUES ${join(errors, ', ')})
      UPDATE outbox_attempts SET error = s.error FROM s WHERE outbox_attempts.id = s.id`);
  return rowCount;
}

/**
 * The earliest time a queued row becomes due (ISO), or null: one read of the partial index that
 * holds the queued rows only (SQLite is told it: unguided it read the queued rows' `(state, id)`
 * range in full to find their minimum).
 */
export const NEXT_DUE_AT = sql`SELECT MIN(next_attempt_at) AS at FROM outbox${indexedBy('outbox_queued_due_idx')} WHERE state = 'queued'`;
