import { isoAt } from '../common/clock.js';
import { PERSONAL_FIELDS } from '../common/redact.js';
import { maskEventsOf } from '../inbox/mask.js';
import {
  type Masker,
  maskedOrNull,
  maskReceivedOrNull,
  personalMasker,
  personalValuesOf,
} from '../operations/personal.js';
import { OUTBOX_ROW_LOCK } from '../operations/rows.js';
import { FINISHED_STATES } from '../operations/states.js';
import type { ScrubbedTexts } from '../operations/storeSeam.js';
import { scrubOperations } from '../operations/transitions.js';
import { all, type Script, type ScriptStore } from '../store/script.js';
import { limitRows, raw, sql, typed, valueList, whenShared } from '../store/sql.js';

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
    const error = maskedOrNull(attempt.error, mask);
    return error === attempt.error ? [] : [{ id: attempt.id, error }];
  });
  const texts = row.texts;
  return {
    texts: {
      id: row.id,
      body: scrubbedBody(row.body),
      response: maskReceivedOrNull(texts?.response ?? null, mask),
      lastError: maskedOrNull(texts?.last_error ?? null, mask),
      decisionReason: maskedOrNull(texts?.decision_reason ?? null, mask),
      attemptErrors,
    },
    mask,
  };
}

/** A scrub candidate as read: its ref (for its webhook events), body and free texts. */
interface CandidateRow extends NonNullable<ScrubSource['texts']> {
  id: number;
  ref: string;
  body: string;
}

/** Finished states inlined as literals (code's constants, never input). */
const FINISHED = raw(FINISHED_STATES.map((s) => `'${s}'`).join(', '));

/**
 * One batch of the scrub, in one transaction: up to {@link SCRUB_BATCH} candidates, by id, their
 * texts stored scrubbed and their webhook events masked. Where processes share the store the
 * candidates are locked SKIP LOCKED, so replicas scrubbing at once share the backlog, and a row
 * being decided right now is scrubbed at the next run. Returns how many rows it scrubbed.
 */
function* scrubBatch(cutoffIso: string, nowIso: string): Script<number> {
  const rows = yield* all<CandidateRow>(sql`
    SELECT id, "marketplaceTransactionRef" AS ref, body, response, last_error, decision_reason FROM outbox
     WHERE scrubbed_at IS NULL AND state IN (${FINISHED})
       AND COALESCE(finished_at, decided_at, updated_at) <= ${typed(cutoffIso, 'timestamptz')}
     ORDER BY id ${limitRows(SCRUB_BATCH)}${whenShared(raw(` ${OUTBOX_ROW_LOCK} SKIP LOCKED`))}`);
  if (rows.length === 0) return 0;
  const attempts = yield* all<{ id: number; outbox_id: number; error: string | null }>(sql`
    SELECT id, outbox_id, error FROM outbox_attempts
     WHERE outbox_id IN (${valueList(rows.map((r) => r.id))}) ORDER BY id`);
  const scrubbed: ScrubbedTexts[] = [];
  for (const row of rows) {
    const own = attempts.filter((a) => a.outbox_id === row.id);
    const { texts, mask } = scrubbedTextsOf({ id: row.id, body: row.body, texts: row, attempts: own });
    scrubbed.push(texts);
    yield* maskEventsOf(row.ref, mask);
  }
  yield* scrubOperations(scrubbed, nowIso);
  return rows.length;
}

/**
 * Scrubs rows that reached a final state (approved, rejected, failed, cancelled) at least
 * `afterDays` ago (see {@link scrubbedTextsOf}), and the body and reason of the operation's webhook
 * events. Stamps `scrubbed_at`. `body_hash` is left alone, so a repeated enqueue of the original
 * input still answers 200. One transaction per batch: a backlog of months is scrubbed without one
 * long write lock, and no snapshot spans two batches, so the old row versions (the personal data)
 * are dead once their batch commits. What the store keeps of them after that is its adapter's to
 * erase (`afterScrub`: SQLite's WAL; README "What the scrub leaves on disk"). Returns the number of
 * rows scrubbed.
 */
export async function scrubFinished(store: ScriptStore, nowMs: number, afterDays: number): Promise<number> {
  const cutoff = isoAt(nowMs - afterDays * 86_400_000);
  const now = isoAt(nowMs);
  let total = 0;
  for (;;) {
    const n = await store.transaction(scrubBatch(cutoff, now));
    total += n;
    if (n < SCRUB_BATCH) return total;
  }
}
