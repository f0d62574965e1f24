import type pg from 'pg';
import { isoAt } from '../clock.js';
import { ScriptInboxStore } from '../inbox/inboxStore.js';
import { maskEventsOf } from '../inbox/mask.js';
import type { StateChangeSink } from '../operations/effects.js';
import { FINISHED_STATES } from '../operations/states.js';
import type { ScrubbedTexts } from '../operations/storeSeam.js';
import { scrubOperations } from '../operations/transitions.js';
import type { OutboxHooks } from '../outbox/hooks.js';
import { PAUSE_KEY, type PauseRecord, pauseOf } from '../outbox/pause.js';
import { SCRUB_BATCH, type ScrubSource, scrubbedTextsOf, scrubCutoff } from '../outbox/scrub.js';
import { maskerFor } from '../outbox/settle.js';
import { inPgTransaction, iso } from './open.js';
import { drivePostgres, postgresScriptStore } from './scripts.js';
import type { QuietAccepted } from './settleGroup.js';

/** Options of {@link pgOutboxHooks}. */
export interface PgOutboxHooksOptions {
  /** What each decision applied writes besides the feed (default: nothing): the store's sink. */
  onStateChange?: StateChangeSink;
  /**
   * The operations store's rows settled accepted with no webhook event for them (settleGroup.ts):
   * nothing to mask or apply, so no transaction (default: none, every accepted row checks).
   */
  quietAccepted?: QuietAccepted;
}

/**
 * The dispatcher's hooks on PostgreSQL (see OutboxHooks). An accepted row's early decisions go
 * through the inbox store's `afterAccepted` once the settle has committed: it locks the row, so run
 * beside the settle it could find it still `sending` and leave the decisions to the sweep.
 */
export function pgOutboxHooks(pool: pg.Pool, options: PgOutboxHooksOptions = {}): OutboxHooks {
  const inbox = new ScriptInboxStore(postgresScriptStore(pool), { onStateChange: options.onStateChange });
  return {
    afterAccepted: async (row, nowIso, settled) => {
      // A failed settle is the dispatcher's to report; a lost lease leaves the row to its new owner.
      if (!(await settled.catch(() => false))) return [];
      if (options.quietAccepted?.take(row.id)) return [];
      return inbox.afterAccepted(
        { id: row.id, ref: row.marketplaceTransactionRef, mask: maskerFor(row) },
        nowIso,
      );
    },
    scrubFinished: (nowMs, afterDays) => scrubFinishedPg(pool, nowMs, afterDays),
    pause: pgPauseRecord(pool),
  };
}

/** The pause record (pause.ts) in PostgreSQL's `daemon_state`, shared by every replica. */
export function pgPauseRecord(pool: pg.Pool): PauseRecord {
  const read = async (client: pg.Pool | pg.ClientBase, lock = '') =>
    pauseOf(
      (
        await client.query<{ value: string; updated_at: string }>(
          `SELECT value, ${iso('updated_at')} AS updated_at FROM daemon_state WHERE key = $1 ${lock}`,
          [PAUSE_KEY],
        )
      ).rows[0],
    );
  return {
    read: () => read(pool),
    write: (pause, nowIso) =>
      inPgTransaction(pool, async (client) => {
        const kept = { ...pause, since: (await read(client, 'FOR UPDATE'))?.since ?? pause.since };
        await client.query(
          `INSERT INTO daemon_state (key, value, updated_at) VALUES ($1, $2, $3)
           ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`,
          [PAUSE_KEY, JSON.stringify(kept), nowIso],
        );
        return kept;
      }),
    clear: async () => {
      await pool.query('DELETE FROM daemon_state WHERE key = $1', [PAUSE_KEY]);
    },
  };
}

/** A scrub candidate as read: its ref (for its webhook events), body and free texts. */
interface CandidateRow extends NonNullable<ScrubSource['texts']> {
  id: number;
  ref: string;
  body: string;
}

/**
 * scrubFinishedRows (scrub.ts) on PostgreSQL: the same rows, columns and masks (scrubbedTextsOf),
 * the operation's webhook events masked in the same transaction, SCRUB_BATCH rows a transaction.
 * Candidates are locked SKIP LOCKED, so replicas scrubbing at once share the backlog, and a row
 * being decided right now is scrubbed at the next run. Each batch commits before the next starts and
 * no snapshot spans two, so the old row versions (the personal data) are dead at once and VACUUM
 * may reclaim them while a long backlog is still being scrubbed; what stays on disk until then is
 * in README ("What the scrub leaves on disk"). Returns the number of rows scrubbed.
 */
export async function scrubFinishedPg(pool: pg.Pool, nowMs: number, afterDays: number): Promise<number> {
  const cutoff = scrubCutoff(nowMs, afterDays);
  const now = isoAt(nowMs);
  let total = 0;
  for (;;) {
    const n = await inPgTransaction(pool, (client) => scrubBatch(client, cutoff, now));
    total += n;
    if (n < SCRUB_BATCH) return total;
  }
}

async function scrubBatch(client: pg.ClientBase, cutoff: string, now: string): Promise<number> {
  const { rows } = await client.query<CandidateRow>(
    `SELECT id::float8 AS id, "marketplaceTransactionRef" AS ref, body, response, last_error, decision_reason
       FROM outbox
      WHERE scrubbed_at IS NULL AND state = ANY($1::text[])
        AND COALESCE(finished_at, decided_at, updated_at) <= $2::timestamptz
      ORDER BY id LIMIT $3
      FOR UPDATE SKIP LOCKED`,
    [FINISHED_STATES, cutoff, SCRUB_BATCH],
  );
  if (rows.length === 0) return 0;
  const { rows: attempts } = await client.query<{ id: number; outbox_id: number; error: string | null }>(
    `SELECT id::float8 AS id, outbox_id::float8 AS outbox_id, error FROM outbox_attempts
      WHERE outbox_id = ANY($1::bigint[]) ORDER BY id`,
    [rows.map((r) => r.id)],
  );
  const scrubbed: ScrubbedTexts[] = [];
  for (const row of rows) {
    const { texts, mask } = scrubbedTextsOf({
      id: row.id,
      body: row.body,
      texts: row,
      attempts: attempts.filter((a) => a.outbox_id === row.id),
    });
    scrubbed.push(texts);
    await drivePostgres(client, maskEventsOf(row.ref, mask));
  }
  await drivePostgres(client, scrubOperations(scrubbed, now));
  return rows.length;
}
