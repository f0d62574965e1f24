import type { Statement } from 'better-sqlite3';
import type { Sqlite } from '../db/open.js';
import { perHandle } from '../db/perHandle.js';

/**
 * Every SQL statement of the outbox, prepared once per connection. Timestamps are ISO strings
 * (`isoAt`), which sort as text, so `next_attempt_at <= @now` compares instants.
 */

/** An outbox row exactly as stored. */
export interface OutboxRow {
  id: number;
  marketplaceTransactionRef: string;
  operationType: string;
  order_key: string | null;
  body: string;
  body_hash: string;
  state: OutboxState;
  attempts: number;
  next_attempt_at: string;
  lease_owner: string | null;
  lease_until: string | null;
  last_error: string | null;
  last_status: number | null;
  response: string | null;
  decision_reason: string | null;
  created_at: string;
  updated_at: string;
  accepted_at: string | null;
  decided_at: string | null;
  finished_at: string | null;
  scrubbed_at: string | null;
  retried_at: string | null;
}

/** One delivery attempt as stored. */
export interface AttemptRow {
  id: number;
  outbox_id: number;
  started_at: string;
  duration_ms: number;
  status_code: number | null;
  error: string | null;
}

export type OutboxState =
  | 'queued'
  | 'sending'
  | 'accepted'
  | 'approved'
  | 'rejected'
  | 'failed'
  | 'cancelled';

export const OUTBOX_STATES: readonly OutboxState[] = [
  'queued',
  'sending',
  'accepted',
  'approved',
  'rejected',
  'failed',
  'cancelled',
];

/** The `daemon_state` key under which a paused dispatcher records why and since when. */
export const PAUSE_KEY = 'outbox.paused';

/** Claimable: due and queued, or sending with a lease that ran out (its claimant died). */
const READY = `(o.order_key IS NULL OR NOT EXISTS (
      SELECT 1 FROM outbox p
      WHERE p.order_key = o.order_key AND p.id < o.id AND p.state IN ('queued', 'sending')
    ))`;
// One SELECT per state, each walking outbox_state_id_idx in id order and stopping at the limit (a
// single OR over both states made SQLite sort every due row on every claim), then a compare-and-swap
// UPDATE per id. Split rather than one UPDATE ... WHERE id IN (... UNION ALL ...): that form cost
// ~150 us per claim against ~85 us split, and a claim runs once per sent row.
const CANDIDATES_QUEUED = `
SELECT o.id FROM outbox o INDEXED BY outbox_state_id_idx
WHERE o.state = 'queued' AND o.next_attempt_at <= @now AND ${READY}
ORDER BY o.id LIMIT @limit`;
const CANDIDATES_EXPIRED = `
SELECT o.id FROM outbox o INDEXED BY outbox_state_id_idx
WHERE o.state = 'sending' AND o.lease_until < @now AND ${READY}
ORDER BY o.id LIMIT @limit`;
const CLAIM_ONE = `
UPDATE outbox
SET state = 'sending', lease_owner = @owner, lease_until = @leaseUntil, attempts = attempts + 1, updated_at = @now
WHERE id = @id AND ((state = 'queued' AND next_attempt_at <= @now) OR (state = 'sending' AND lease_until < @now))
RETURNING *`;

/** Back to the queue as it was before the claim: the attempt that never got an answer does not count. */
const RELEASE = `
UPDATE outbox SET state = 'queued', attempts = MAX(0, attempts - 1), updated_at = @now,
  lease_owner = NULL, lease_until = NULL`;

/** Only the claimant whose lease still stands may settle a row. */
const MINE = `WHERE id = @id AND state = 'sending' AND lease_owner = @owner`;

function prepareAll(sqlite: Sqlite) {
  const p = <T = unknown>(sql: string) => sqlite.prepare(sql) as Statement<unknown[], T>;
  return {
    insert: p<OutboxRow>(`
      INSERT INTO outbox (marketplaceTransactionRef, operationType, order_key, body, body_hash, state, attempts,
                          next_attempt_at, created_at, updated_at)
      VALUES (@ref, @operationType, @orderKey, @body, @hash, 'queued', 0, @now, @now, @now)
      ON CONFLICT (marketplaceTransactionRef) DO NOTHING
      RETURNING *`),
    byRef: p<OutboxRow>('SELECT * FROM outbox WHERE marketplaceTransactionRef = ?'),
    byId: p<OutboxRow>('SELECT * FROM outbox WHERE id = ?'),
    candidatesQueued: p<number>(CANDIDATES_QUEUED).pluck(),
    candidatesExpired: p<number>(CANDIDATES_EXPIRED).pluck(),
    claimOne: p<OutboxRow>(CLAIM_ONE),
    accept: p(`
      UPDATE outbox SET state = 'accepted', response = @response, last_status = @status, last_error = NULL,
        accepted_at = @now, updated_at = @now, lease_owner = NULL, lease_until = NULL ${MINE}`),
    requeue: p(`
      UPDATE outbox SET state = 'queued', next_attempt_at = @next, last_error = @error, last_status = @status,
        attempts = MAX(0, attempts - @refund), updated_at = @now, lease_owner = NULL, lease_until = NULL ${MINE}`),
    fail: p(`
      UPDATE outbox SET state = 'failed', last_error = @error, last_status = @status, finished_at = @now,
        updated_at = @now, lease_owner = NULL, lease_until = NULL ${MINE}`),
    /** Hands a claimed row back untouched (graceful stop before it was sent). */
    release: p(`${RELEASE} ${MINE}`),
    /**
     * Hands back every claimed row, whoever claimed it: only for a process that knows every
     * claimant is dead (the daemon that owns a SQLite file, at start-up).
     */
    releaseAll: p<Pick<OutboxRow, 'id' | 'marketplaceTransactionRef'>>(
      `${RELEASE} WHERE state = 'sending' RETURNING id, marketplaceTransactionRef`,
    ),
    insertAttempt: p(`
      INSERT INTO outbox_attempts (outbox_id, started_at, duration_ms, status_code, error)
      VALUES (@outboxId, @startedAt, @durationMs, @statusCode, @error)`),
    attemptsOf: p<AttemptRow>('SELECT * FROM outbox_attempts WHERE outbox_id = ? ORDER BY id'),
    /** The earliest time a queued row becomes due, so an idle dispatcher sleeps exactly that long. */
    nextDue: p<{ at: string | null }>(`SELECT MIN(next_attempt_at) AS at FROM outbox WHERE state = 'queued'`),
    earliestLease: p<{ at: string | null }>(
      `SELECT MIN(lease_until) AS at FROM outbox WHERE state = 'sending'`,
    ),
    getState: p<{ value: string; updated_at: string }>(
      'SELECT value, updated_at FROM daemon_state WHERE key = ?',
    ),
    setState: p(`
      INSERT INTO daemon_state (key, value, updated_at) VALUES (@key, @value, @now)
      ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`),
    deleteState: p('DELETE FROM daemon_state WHERE key = ?'),
    list: p<OutboxRow>(`
      SELECT * FROM outbox WHERE id > @after AND (@state IS NULL OR state = @state) ORDER BY id LIMIT @limit`),
    retry: p(`
      UPDATE outbox SET state = 'queued', attempts = 0, next_attempt_at = @now, retried_at = @now, finished_at = NULL,
        updated_at = @now WHERE id = @id AND state = 'failed'`),
    cancel: p(`
      UPDATE outbox SET state = 'cancelled', finished_at = @now, updated_at = @now, lease_owner = NULL, lease_until = NULL
      WHERE id = @id AND (state IN ('queued', 'failed') OR (state = 'sending' AND lease_until < @now))`),
    /** A queued row waiting out its backoff is made due now. */
    expedite: p(
      `UPDATE outbox SET next_attempt_at = @now, updated_at = @now WHERE id = @id AND state = 'queued'`,
    ),
    /** Rows whose final state is older than the cutoff and not scrubbed yet, a batch at a time. */
    scrubCandidates: p<Pick<OutboxRow, 'id' | 'marketplaceTransactionRef' | 'body'>>(`
      SELECT id, marketplaceTransactionRef, body FROM outbox
      WHERE scrubbed_at IS NULL AND state IN ('approved', 'rejected', 'failed', 'cancelled')
        AND COALESCE(finished_at, decided_at, updated_at) <= @cutoff
      ORDER BY id LIMIT @limit`),
    /** Every free-text column of a row that may quote its personal values. */
    scrubTexts: p<Pick<OutboxRow, 'response' | 'last_error' | 'decision_reason'>>(
      'SELECT response, last_error, decision_reason FROM outbox WHERE id = ?',
    ),
    scrubRow: p(`
      UPDATE outbox SET body = @body, response = @response, last_error = @lastError,
        decision_reason = @decisionReason, scrubbed_at = @now, updated_at = @now
      WHERE id = @id AND scrubbed_at IS NULL`),
    setAttemptError: p('UPDATE outbox_attempts SET error = @error WHERE id = @id'),
  };
}

export type OutboxQueries = ReturnType<typeof prepareAll>;

/** The prepared statements of one connection (made once, then reused). */
export const outboxQueries: (sqlite: Sqlite) => OutboxQueries = perHandle(prepareAll);

/** What a claim needs: who claims, the time, the lease's end (ISO) and how many rows at most. */
export interface ClaimParams {
  owner: string;
  now: string;
  leaseUntil: string;
  limit: number;
}

/**
 * Claims up to `limit` claimable rows, oldest first, by compare-and-swap. Must run inside a
 * transaction (the dispatcher's group commit), so the candidates read are still claimable when
 * updated; the UPDATE checks the state again all the same.
 */
export function claimRows(q: OutboxQueries, params: ClaimParams): OutboxRow[] {
  const ids = [...q.candidatesQueued.all(params), ...q.candidatesExpired.all(params)].sort((a, b) => a - b);
  const rows: OutboxRow[] = [];
  for (const id of ids.slice(0, params.limit)) {
    const row = q.claimOne.get({ ...params, id });
    if (row) rows.push(row);
  }
  return rows;
}
