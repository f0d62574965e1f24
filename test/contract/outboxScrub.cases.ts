import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isoAt } from '../../src/common/clock.js';
import { maskedEventText } from '../../src/inbox/mask.js';
import type { OperationsStore } from '../../src/operations/storeSeam.js';
import type { OutboxHooks } from '../../src/outbox/hooks.js';
import { SCRUB_BATCH, SCRUBBED, scrubbedTextsOf } from '../../src/outbox/scrub.js';
import { findAll, hostilePeople, personalNeedles } from '../privacy/leaks.js';

/**
 * The scrub of finished rows through the dispatcher's hooks, the same cases on SQLite
 * (outboxScrub.sqlite.test.ts) and PostgreSQL (outboxScrub.pg.test.ts): the same rows scrubbed, the
 * same columns masked to the same text, the webhook events with them, open and recent rows left
 * alone.
 */

export const T0 = Date.parse('2026-01-01T00:00:00.000Z');
export const NOW = Date.parse('2026-03-01T00:00:00.000Z');
export const AFTER_DAYS = 30;

export interface Texts {
  ref: string;
  body: string;
  body_hash: string;
  response: string | null;
  last_error: string | null;
  decision_reason: string | null;
  scrubbed_at: string | null;
}

export interface ScrubHarness {
  hooks: OutboxHooks;
  ops: OperationsStore;
  /** One statement, `$n` placeholders (both dialects read the quoted identifiers). */
  run(sql: string, params: unknown[]): Promise<void>;
  rows(): Promise<Texts[]>;
  attempts(): Promise<Array<{ outbox_id: number; error: string | null }>>;
  events(): Promise<Array<{ id: number; body: string; reason: string | null }>>;
  close(): Promise<void>;
}

export const ROWS = `SELECT "marketplaceTransactionRef" AS ref, body, body_hash, response, last_error, decision_reason,
  scrubbed_at FROM outbox ORDER BY id`;
export const ATTEMPTS = 'SELECT outbox_id, error FROM outbox_attempts ORDER BY id';
export const EVENTS = 'SELECT id, body, reason FROM webhook_events ORDER BY id';

const bodyOf = (ref: string, people: Record<string, string>) =>
  JSON.stringify({ marketplaceTransactionRef: ref, operationType: 'Transfer', unitId: 101, ...people });

/** Queues each ref, its body naming its people. */
export async function queue(
  h: ScrubHarness,
  refs: ReadonlyArray<[string, Record<string, string>]>,
): Promise<void> {
  await h.ops.insert(
    refs.map(([ref, people]) => ({
      ref,
      operationType: 'Transfer',
      orderKey: null,
      body: bodyOf(ref, people),
      hash: `h-${ref}`,
    })),
    isoAt(T0),
  );
}

/** Moves row `id` to a final state finished at `finishedMs`, every text quoting `echo` (as an older version stored them). */
function finish(h: ScrubHarness, id: number, finishedMs: number, echo: string): Promise<void> {
  return h.run(
    `UPDATE outbox SET state = 'rejected', response = $1, last_error = $1, decision_reason = $1,
       finished_at = $2, decided_at = $2 WHERE id = $3`,
    [echo, isoAt(finishedMs), id],
  );
}

/** Registers the cases on `dialect`; `open` gives each case an empty store. */
export function outboxScrubCases(dialect: 'sqlite' | 'postgres', open: () => Promise<ScrubHarness>): void {
  describe(`scrub of finished rows on ${dialect}`, () => {
    let h: ScrubHarness;
    beforeEach(async () => {
      h = await open();
    });
    afterEach(async () => {
      await h.close();
    });

    it('masks every column of an old finished row and its webhook events; open and recent rows keep theirs', async () => {
      const [old, open, recent] = [hostilePeople(3), hostilePeople(4), hostilePeople(5)];
      await queue(h, [
        ['scrub-old-1', old],
        ['scrub-open-2', open],
        ['scrub-recent-3', recent],
      ]);
      const echo = JSON.stringify({ message: `bad ${old.originUserName}`, request: old });
      await finish(h, 1, T0, echo);
      await finish(h, 3, NOW - 86_400_000, JSON.stringify({ request: recent }));
      await h.run(
        `INSERT INTO outbox_attempts (outbox_id, started_at, duration_ms, status_code, error) VALUES (1, $1, 5, 422, $2)`,
        [isoAt(T0), echo],
      );
      await h.run(
        `INSERT INTO webhook_events (webhook_id, received_at, "marketplaceTransactionRef", decision, reason, body, outcome)
       VALUES ('msg_1', $1, 'scrub-old-1', 'rejected', $2, $3, 'applied')`,
        [isoAt(T0), `no funds for ${old.destinationUserEmail}`, echo],
      );
      const [before] = await h.rows();
      const [eventBefore] = await h.events();

      expect(await h.hooks.scrubFinished(NOW, AFTER_DAYS)).toBe(1);

      const [scrubbed, openRow, recentRow] = await h.rows();
      const attempts = await h.attempts();
      const events = await h.events();
      // Nothing of the old row's people is left anywhere it was.
      const cells = [
        ...Object.entries(scrubbed ?? {}).map(([column, text]) => ({
          where: `outbox.${column}`,
          text: String(text),
        })),
        ...attempts.map((a) => ({ where: 'outbox_attempts.error', text: String(a.error) })),
        ...events.flatMap((e) => [
          { where: 'webhook_events.body', text: e.body },
          { where: 'webhook_events.reason', text: String(e.reason) },
        ]),
      ];
      expect(findAll(cells, personalNeedles([old], false)).map((f) => `${f.where}: ${f.needle}`)).toEqual([]);
      // Each column holds what the one pure decision says, on both stores.
      const decided = scrubbedTextsOf({
        id: 1,
        body: before?.body ?? '',
        texts: before,
        attempts: [{ id: 1, error: echo }],
      });
      expect(scrubbed).toEqual({
        ref: 'scrub-old-1',
        body: decided.texts.body,
        body_hash: 'h-scrub-old-1',
        response: decided.texts.response,
        last_error: decided.texts.lastError,
        decision_reason: decided.texts.decisionReason,
        scrubbed_at: isoAt(NOW),
      });
      expect(JSON.parse(scrubbed?.body ?? '{}')).toMatchObject({ originUserName: SCRUBBED, unitId: 101 });
      expect(attempts).toEqual([{ outbox_id: 1, error: decided.texts.attemptErrors[0]?.error }]);
      const eventAfter = eventBefore && maskedEventText(eventBefore, decided.mask);
      expect(events).toEqual([eventAfter]);
      // The open row keeps its body for the operator, the recent one until its time comes.
      expect(openRow).toMatchObject({ body: bodyOf('scrub-open-2', open), scrubbed_at: null });
      expect(recentRow).toMatchObject({ body: bodyOf('scrub-recent-3', recent), scrubbed_at: null });
      // Scrubbed once: the next run finds nothing.
      expect(await h.hooks.scrubFinished(NOW, AFTER_DAYS)).toBe(0);
    });

    it('scrubs a backlog larger than a batch whole', async () => {
      const count = SCRUB_BATCH + 1;
      await queue(
        h,
        Array.from(
          { length: count },
          (_, i) => [`backlog-${i}`, hostilePeople(i)] as [string, Record<string, string>],
        ),
      );
      await h.run(`UPDATE outbox SET state = 'cancelled', finished_at = $1`, [isoAt(T0)]);
      expect(await h.hooks.scrubFinished(NOW, AFTER_DAYS)).toBe(count);
      const rows = await h.rows();
      expect(rows.filter((r) => r.scrubbed_at === isoAt(NOW))).toHaveLength(count);
      expect(
        findAll(
          rows.map((r) => ({ where: r.ref, text: r.body })),
          personalNeedles([hostilePeople(0)], false),
        ),
      ).toEqual([]);
    });
  });
}
