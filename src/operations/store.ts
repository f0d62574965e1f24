import type { Statement } from 'better-sqlite3';
import type { Sqlite } from '../db/open.js';
import { perHandle } from '../db/perHandle.js';
import { driveSqlite } from '../store/sqliteScripts.js';
import { type StateChange, stateChangeSinkOf } from './effects.js';
import { eventAppliesSql, guardSql, type OperationRow } from './rows.js';
import { stateChanged as stateChangedScript } from './stateChanged.js';
import { fromStates, type OperationState } from './states.js';

/**
 * Every statement that changes an `outbox` or `outbox_attempts` row, and nothing else writes those
 * tables. Synchronous (better-sqlite3): callers run them inside their transaction or group commit.
 * Each `WHERE state ...` is derived from the transition table (states.ts), so the compare-and-swap
 * refuses whatever the table refuses, even against another process. Every state change passes
 * through {@link stateChanged}. A PostgreSQL store implements the same functions (async).
 */

/** Every state change passes here, in its transaction: the rule is stateChanged.ts's, run on this handle. */
function stateChanged(sqlite: Sqlite, changes: readonly StateChange[]): void {
  driveSqlite(sqlite, stateChangedScript(changes, stateChangeSinkOf(sqlite)));
}

/** Back to the queue as it was before the claim: the attempt that never got an answer does not count. */
const RELEASE = `
UPDATE outbox SET state = 'queued', attempts = MAX(0, attempts - 1), updated_at = @now,
  lease_owner = NULL, lease_until = NULL`;

/** Claimable per from-state of `claim`: one SELECT each, walking outbox_state_id_idx in id order. */
const READY = `(o.order_key IS NULL OR NOT EXISTS (
      SELECT 1 FROM outbox p
      WHERE p.order_key = o.order_key AND p.id < o.id AND p.state IN ('queued', 'sending')
    ))`;

function prepareAll(sqlite: Sqlite) {
  const p = <T = unknown>(sql: string) => sqlite.prepare(sql) as Statement<unknown[], T>;
  const where = (event: Parameters<typeof eventAppliesSql>[0]) =>
    `WHERE id = @id AND ${eventAppliesSql(event)}`;
  return {
    insert: p<OperationRow>(`
      INSERT INTO outbox (marketplaceTransactionRef, operationType, order_key, body, body_hash, state, attempts,
                          next_attempt_at, created_at, updated_at)
      VALUES (@ref, @operationType, @orderKey, @body, @hash, 'queued', 0, @now, @now, @now)
      ON CONFLICT (marketplaceTransactionRef) DO NOTHING
      RETURNING *`),
    // One SELECT per from-state, each walking outbox_state_id_idx in id order and stopping at the
    // limit (a single OR over both states made SQLite sort every due row on every claim), then a
    // compare-and-swap UPDATE per id. Split rather than one UPDATE ... WHERE id IN (... UNION ALL
    // ...): that form cost ~150 us per claim against ~85 us split, and a claim runs once per sent row.
    candidates: fromStates('claim').map(({ from, when }) => ({
      from,
      select: p<number>(`
        SELECT o.id FROM outbox o INDEXED BY outbox_state_id_idx
        WHERE o.state = '${from}' AND ${when ? `${guardSql(when, 'o.')} AND ` : ''}${READY}
        ORDER BY o.id LIMIT @limit`).pluck(),
    })),
    claimOne: p<OperationRow>(`
      UPDATE outbox
      SET state = 'sending', lease_owner = @owner, lease_until = @leaseUntil, attempts = attempts + 1, updated_at = @now
      ${where('claim')}
      RETURNING *`),
    accept: p(`
      UPDATE outbox SET state = 'accepted', response = @response, last_status = @status, last_error = NULL,
        accepted_at = @now, updated_at = @now, lease_owner = NULL, lease_until = NULL ${where('accept')}`),
    requeue: p(`
      UPDATE outbox SET state = 'queued', next_attempt_at = @next, last_error = @error, last_status = @status,
        attempts = MAX(0, attempts - @refund), updated_at = @now, lease_owner = NULL, lease_until = NULL
      ${where('requeue')}`),
    fail: p(`
      UPDATE outbox SET state = 'failed', last_error = @error, last_status = @status, finished_at = @now,
        updated_at = @now, lease_owner = NULL, lease_until = NULL ${where('fail')}`),
    release: p(`${RELEASE} ${where('release')}`),
    releaseAll: p<{ id: number; ref: string }>(
      `${RELEASE} WHERE state = 'sending' RETURNING id, marketplaceTransactionRef AS ref`,
    ),
    insertAttempt: p(`
      INSERT INTO outbox_attempts (outbox_id, started_at, duration_ms, status_code, error)
      VALUES (@outboxId, @startedAt, @durationMs, @statusCode, @error)`),
    // approve and reject leave the same state; the table says which.
    decide: p(`
      UPDATE outbox SET state = @to, decision_reason = @reason, decided_at = @now, finished_at = @now,
        updated_at = @now ${where('approve')}`),
    retry: p(`
      UPDATE outbox SET state = 'queued', attempts = 0, next_attempt_at = @now, retried_at = @now, finished_at = NULL,
        updated_at = @now ${where('retry')}`),
    expedite: p(`UPDATE outbox SET next_attempt_at = @now, updated_at = @now ${where('expedite')}`),
    cancel: p(`
      UPDATE outbox SET state = 'cancelled', finished_at = @now, updated_at = @now, lease_owner = NULL, lease_until = NULL
      ${where('cancel')}`),
    scrub: p(`
      UPDATE outbox SET body = @body, response = @response, last_error = @lastError,
        decision_reason = @decisionReason, scrubbed_at = @now, updated_at = @now
      WHERE id = @id AND scrubbed_at IS NULL`),
    setAttemptError: p('UPDATE outbox_attempts SET error = @error WHERE id = @id'),
  };
}

const statements = perHandle(prepareAll);

/** A validated notification to queue. */
export interface NewOperation {
  ref: string;
  /** The operation type as sent to the operator. */
  operationType: string;
  orderKey: string | null;
  /** The body sent on every attempt. */
  body: string;
  /** Hash of the validated input (tells a repeat from a conflicting body). */
  hash: string;
}

/** Queues an operation; undefined when its ref is queued already (nothing changes then). */
export function insertOperation(sqlite: Sqlite, op: NewOperation, nowIso: string): OperationRow | undefined {
  const row = statements(sqlite).insert.get({ ...op, now: nowIso });
  if (row)
    stateChanged(sqlite, [{ ref: row.marketplaceTransactionRef, from: null, to: 'queued', at: nowIso }]);
  return row;
}

/** What a claim needs: who claims, the time, the lease's end (ISO) and how many rows at most. */
export interface ClaimParams {
  owner: string;
  now: string;
  leaseUntil: string;
  limit: number;
}

/**
 * Claims up to `limit` claimable rows, oldest first, by compare-and-swap: due queued rows, and
 * sending rows whose lease ran out (their claimant died). Never ahead of an older unsettled row with
 * the same order key. Run it inside a transaction (the dispatcher's group commit), so the candidates
 * read are still claimable when updated; the UPDATE checks again all the same.
 */
export function claimOperations(sqlite: Sqlite, params: ClaimParams): OperationRow[] {
  const st = statements(sqlite);
  const found = st.candidates.flatMap(({ from, select }) => select.all(params).map((id) => ({ id, from })));
  found.sort((a, b) => a.id - b.id);
  const rows: OperationRow[] = [];
  const changes: StateChange[] = [];
  for (const { id, from } of found.slice(0, params.limit)) {
    const row = st.claimOne.get({ ...params, id });
    if (!row) continue;
    rows.push(row);
    changes.push({ ref: row.marketplaceTransactionRef, from, to: 'sending', at: params.now });
  }
  stateChanged(sqlite, changes);
  return rows;
}

/** A claimed row, named by its claimant. */
export interface Claim {
  id: number;
  ref: string;
  /** The lease owner. */
  owner: string;
  now: string;
}

/** What an attempt's answer moves its row to (see outbox/nextStep.ts). */
export type SettleStep =
  | { to: 'accepted'; response: string; status: number }
  | { to: 'queued'; nextAttemptAt: string; error: string; status: number | null; refund: boolean }
  | { to: 'failed'; error: string; status: number | null };

/** One delivery attempt, for the attempt log. */
export interface AttemptRecord {
  startedAt: string;
  durationMs: number;
  statusCode: number | null;
  error: string | null;
}

/**
 * Logs the attempt and moves its row to `step`, if `claim.owner` still holds the lease; false
 * when it does not (another claimant took the row over and settles it).
 */
export function settleAttempt(
  sqlite: Sqlite,
  claim: Claim,
  attempt: AttemptRecord,
  step: SettleStep,
): boolean {
  const st = statements(sqlite);
  st.insertAttempt.run({ outboxId: claim.id, ...attempt });
  const key = { id: claim.id, owner: claim.owner, now: claim.now };
  const moved =
    step.to === 'accepted'
      ? st.accept.run({ ...key, response: step.response, status: step.status })
      : step.to === 'failed'
        ? st.fail.run({ ...key, error: step.error, status: step.status })
        : st.requeue.run({
            ...key,
            next: step.nextAttemptAt,
            error: step.error,
            status: step.status,
            refund: step.refund ? 1 : 0,
          });
  if (moved.changes === 0) return false;
  stateChanged(sqlite, [{ ref: claim.ref, from: 'sending', to: step.to, at: claim.now }]);
  return true;
}

/** Hands a claimed row back unsent (attempt not counted); false when the lease was lost meanwhile. */
export function releaseClaim(sqlite: Sqlite, claim: Claim): boolean {
  const released = statements(sqlite).release.run({ id: claim.id, owner: claim.owner, now: claim.now });
  if (released.changes === 0) return false;
  stateChanged(sqlite, [{ ref: claim.ref, from: 'sending', to: 'queued', at: claim.now }]);
  return true;
}

/**
 * Hands back every claimed row, whoever claimed it (attempt not counted, lease cleared): only for
 * a process that knows every claimant is dead (the daemon that owns a SQLite file, at start-up).
 * Returns the rows released, by id.
 */
export function releaseAllClaims(sqlite: Sqlite, nowIso: string): Array<{ id: number; ref: string }> {
  const rows = statements(sqlite)
    .releaseAll.all({ now: nowIso })
    .sort((a, b) => a.id - b.id);
  stateChanged(
    sqlite,
    rows.map((r) => ({ ref: r.ref, from: 'sending', to: 'queued', at: nowIso })),
  );
  return rows;
}

/** The operator's decision on an accepted row; false when the row is not accepted (nothing changes). */
export function recordDecision(
  sqlite: Sqlite,
  d: { id: number; ref: string; decision: 'approved' | 'rejected'; reason: string | null; now: string },
): boolean {
  const decided = statements(sqlite).decide.run({ id: d.id, to: d.decision, reason: d.reason, now: d.now });
  if (decided.changes === 0) return false;
  stateChanged(sqlite, [{ ref: d.ref, from: 'accepted', to: d.decision, at: d.now }]);
  return true;
}

/** A failed row back to the queue, attempts reset, its age counted from now; false unless it was failed. */
export function retryFailed(sqlite: Sqlite, op: { id: number; ref: string }, nowIso: string): boolean {
  if (statements(sqlite).retry.run({ id: op.id, now: nowIso }).changes === 0) return false;
  stateChanged(sqlite, [{ ref: op.ref, from: 'failed', to: 'queued', at: nowIso }]);
  return true;
}

/** A queued row waiting out its backoff made due now (no state change); false unless it was queued. */
export function expedite(sqlite: Sqlite, id: number, nowIso: string): boolean {
  return statements(sqlite).expedite.run({ id, now: nowIso }).changes > 0;
}

/**
 * Cancels a row the operator has not accepted (queued, failed, or sending under a dead lease);
 * false when the table refuses it in its current state. `from` is the state the caller read in the
 * same transaction.
 */
export function cancelOperation(
  sqlite: Sqlite,
  op: { id: number; ref: string; from: OperationState },
  nowIso: string,
): boolean {
  if (statements(sqlite).cancel.run({ id: op.id, now: nowIso }).changes === 0) return false;
  stateChanged(sqlite, [{ ref: op.ref, from: op.from, to: 'cancelled', at: nowIso }]);
  return true;
}

/** A row's texts with personal data replaced or masked (see outbox/scrub.ts); no state change. */
export interface ScrubbedTexts {
  id: number;
  body: string;
  response: string | null;
  lastError: string | null;
  decisionReason: string | null;
  /** Attempts whose error text changed, with the new text. */
  attemptErrors: ReadonlyArray<{ id: number; error: string | null }>;
}

/** Stores the scrubbed texts of a batch of rows and stamps `scrubbed_at`; returns how many rows changed. */
export function scrubOperations(sqlite: Sqlite, rows: readonly ScrubbedTexts[], nowIso: string): number {
  const st = statements(sqlite);
  let changed = 0;
  for (const { attemptErrors, ...row } of rows) {
    changed += st.scrub.run({ ...row, now: nowIso }).changes;
    for (const attempt of attemptErrors) st.setAttemptError.run(attempt);
  }
  return changed;
}
