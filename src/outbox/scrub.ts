import { isoAt } from '../clock.js';
import { maskEventsOf } from '../inbox/mask.js';
import { type Masker, maskReceivedOrNull, personalMasker, personalValuesOf } from '../operations/personal.js';
import { attemptsOf, freeTextsOf, scrubCandidates } from '../operations/reads.js';
import { scrubOperations } from '../operations/store.js';
import type { ScrubbedTexts } from '../operations/storeSeam.js';
import { PERSONAL_FIELDS } from '../redact.js';
import { driveSqlite } from '../sqlite/commitQueue.js';
import type { Sqlite } from '../sqlite/open.js';
import { purgeWalAfterScrub, purgeWalIfOwed } from '../sqlite/walPurge.js';

/** What replaces a personal field in a stored body once scrubbed. */
export const SCRUBBED = '[scrubbed]';

/** Rows scrubbed per transaction, on both stores: a backlog of months is scrubbed without one long write lock. */
export const SCRUB_BATCH = 200;

/** The stored body with its personal fields replaced (the body is our own flat notification). */
export function scrubbedBody(bodyText: string): string {
  let body: unknown;
  try {
    body = JSON.parse(bodyText);
  } catch {
    return bodyText;
  }
  if (!body || typeof body !== 'object' || Array.isArray(body)) return bodyText;
  const out = { ...(body as Record<string, unknown>) };
  for (const f of PERSONAL_FIELDS) if (out[f] !== undefined && out[f] !== null) out[f] = SCRUBBED;
  return JSON.stringify(out);
}

const masked = (text: string | null, mask: Masker) => (text === null ? null : mask(text));

/** A finished row's texts as read for its scrub: the body, every free-text column, its attempts' errors. */
export interface ScrubSource {
  id: number;
  body: string;
  texts: { response: string | null; last_error: string | null; decision_reason: string | null } | undefined;
  attempts: ReadonlyArray<{ id: number; error: string | null }>;
}

/**
 * What a finished row's scrub stores (both stores): the body's personal fields replaced, the row's
 * personal values masked out of every other text (the operator's response, last error, decision
 * reason, each attempt's error) in case they were stored before masking covered them; and the
 * masker, for the operation's webhook events. Pure.
 */
export function scrubbedTextsOf(row: ScrubSource): { texts: ScrubbedTexts; mask: Masker } {
  const mask = personalMasker(personalValuesOf(row.body));
  const attemptErrors = row.attempts.flatMap((attempt) => {
    const error = masked(attempt.error, mask);
    return error === attempt.error ? [] : [{ id: attempt.id, error }];
  });
  const texts = row.texts;
  return {
    texts: {
      id: row.id,
      body: scrubbedBody(row.body),
      response: maskReceivedOrNull(texts?.response ?? null, mask),
      lastError: masked(texts?.last_error ?? null, mask),
      decisionReason: masked(texts?.decision_reason ?? null, mask),
      attemptErrors,
    },
    mask,
  };
}

/** The oldest finish a scrub at `nowMs` takes (ISO): rows finished at least `afterDays` ago. */
export function scrubCutoff(nowMs: number, afterDays: number): string {
  return isoAt(nowMs - afterDays * 86_400_000);
}

/**
 * Scrubs rows that reached a final state (approved, rejected, failed, cancelled) at least
 * `afterDays` ago (see {@link scrubbedTextsOf}), and the body and reason of the operation's webhook
 * events. Stamps `scrubbed_at`. `body_hash` is left alone, so a repeated enqueue of the original
 * input still answers 200. Synchronous, one transaction per batch. No copy is left in the file:
 * writing connections zero what they free (`secure_delete`, sqlite/open.ts), so neither the scrubbed
 * values nor the copies earlier updates of the row left behind survive in the database file, and
 * the WAL is emptied after (sqlite/walPurge.ts). Returns the number of rows scrubbed.
 * (scrubFinishedPg in pgHooks.ts does the same on PostgreSQL.)
 */
export function scrubFinishedRows(sqlite: Sqlite, nowMs: number, afterDays: number): number {
  const cutoff = scrubCutoff(nowMs, afterDays);
  const now = isoAt(nowMs);
  const batch = sqlite.transaction((): number => {
    const rows = scrubCandidates(sqlite, cutoff, SCRUB_BATCH);
    const scrubbed: ScrubbedTexts[] = [];
    for (const row of rows) {
      const { texts, mask } = scrubbedTextsOf({
        id: row.id,
        body: row.body,
        texts: freeTextsOf(sqlite, row.id),
        attempts: attemptsOf(sqlite, row.id),
      });
      scrubbed.push(texts);
      driveSqlite(sqlite, maskEventsOf(row.marketplaceTransactionRef, mask));
    }
    scrubOperations(sqlite, scrubbed, now);
    return rows.length;
  });
  let total = 0;
  for (;;) {
    const n = batch.immediate();
    total += n;
    if (n < SCRUB_BATCH) break;
  }
  // The rows are overwritten in the database file's pages (secure_delete, sqlite/open.ts); their old
  // versions are still in the WAL until it is emptied.
  if (total > 0) purgeWalAfterScrub(sqlite);
  else purgeWalIfOwed(sqlite);
  return total;
}
