import { isoAt } from '../clock.js';
import type { Sqlite } from '../db/open.js';
import { maskEventsOf } from '../inbox/mask.js';
import { type Masker, maskReceivedOrNull, personalMasker, personalValuesOf } from '../operations/personal.js';
import { attemptsOf, freeTextsOf, scrubCandidates } from '../operations/reads.js';
import { type ScrubbedTexts, scrubOperations } from '../operations/store.js';
import { PERSONAL_FIELDS } from '../redact.js';

/** What replaces a personal field in a stored body once scrubbed. */
export const SCRUBBED = '[scrubbed]';

/** Rows scrubbed per transaction: a backlog of months is scrubbed without one long write lock. */
const BATCH = 200;

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

/**
 * Scrubs rows that reached a final state (approved, rejected, failed, cancelled) at least
 * `afterDays` ago: the personal fields of the body are replaced, and every other column that may
 * quote them (the operator's response, last error, decision reason, each attempt's error, and the
 * body and reason of the operation's webhook events) has the row's personal values masked, in
 * case they were stored before masking covered them. Stamps `scrubbed_at`. `body_hash` is left
 * alone, so a repeated enqueue of the original input still answers 200. Synchronous, one
 * transaction per batch. Returns the number of rows scrubbed.
 */
export function scrubFinishedRows(sqlite: Sqlite, nowMs: number, afterDays: number): number {
  const cutoff = isoAt(nowMs - afterDays * 86_400_000);
  const now = isoAt(nowMs);
  const batch = sqlite.transaction((): number => {
    const rows = scrubCandidates(sqlite, cutoff, BATCH);
    const scrubbed: ScrubbedTexts[] = [];
    for (const row of rows) {
      const mask = personalMasker(personalValuesOf(row.body));
      const texts = freeTextsOf(sqlite, row.id);
      const attemptErrors = attemptsOf(sqlite, row.id).flatMap((attempt) => {
        const error = masked(attempt.error, mask);
        return error === attempt.error ? [] : [{ id: attempt.id, error }];
      });
      scrubbed.push({
        id: row.id,
        body: scrubbedBody(row.body),
        response: maskReceivedOrNull(texts?.response ?? null, mask),
        lastError: masked(texts?.last_error ?? null, mask),
        decisionReason: masked(texts?.decision_reason ?? null, mask),
        attemptErrors,
      });
      maskEventsOf(sqlite, row.marketplaceTransactionRef, mask);
    }
    scrubOperations(sqlite, scrubbed, now);
    return rows.length;
  });
  let total = 0;
  for (;;) {
    const n = batch.immediate();
    total += n;
    if (n < BATCH) return total;
  }
}
