import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { compileVocabulary } from '../../src/inbox/vocabulary.js';
import { personalMasker } from '../../src/operations/personal.js';
import {
  accept,
  decision,
  type InboxHarness,
  queue,
  T1,
  T2,
  WEBHOOK_CONFIG,
  webhook,
} from './inboxStores.js';

/**
 * The inbox store seam, the same cases on SQLite (inboxStore.sqlite.test.ts) and PostgreSQL
 * (inboxStore.pg.test.ts): a webhook is recorded once, a replay recognised by webhook id + body
 * hash, a decision applied through the operations transition table with its feed row and delivery,
 * kept pending until its row is accepted, a second decision recorded as a conflict, undecided events
 * read again.
 */

/** Registers the cases on `dialect`; `open` gives each case an empty store. */
export function inboxStoreCases(dialect: 'sqlite' | 'postgres', open: () => Promise<InboxHarness>): void {
  describe(`inbox store seam on ${dialect}`, () => {
    let h: InboxHarness;
    beforeEach(async () => {
      h = await open();
    });
    afterEach(async () => {
      await h.close();
    });

    it('records a decision and applies it to its accepted row, feed row and delivery in the same commit', async () => {
      const id = await accept(h.ops, 'a');
      const result = await h.inbox.receive(webhook('msg-1', decision('a', 'approved')));
      expect(result).toEqual({
        outcome: 'applied',
        replay: false,
        idReused: false,
        effects: [{ kind: 'approved', ref: 'a', outboxId: id }],
      });
      expect(await h.events()).toEqual(['msg-1 applied -> a']);
      expect(await h.rows()).toEqual(['a approved']);
      expect(await h.feed()).toEqual(['a queued', 'a accepted', 'a approved']);
      expect(await h.deliveries()).toEqual(['a operation.accepted', 'a operation.approved']);
    });

    it('recognises a replay (same id, same body): nothing stored or changed the second time', async () => {
      await accept(h.ops, 'a');
      const event = webhook('msg-1', decision('a', 'rejected', 'no'));
      expect((await h.inbox.receive(event)).outcome).toBe('applied');
      expect(await h.inbox.receive({ ...event, receivedAt: T2 })).toEqual({
        outcome: 'duplicate',
        replay: true,
        idReused: false,
        effects: [],
      });
      // A deposit replayed does not touch custody again either.
      const deposit = webhook('msg-2', { type: 'custody.deposit', unitIds: ['u1', 'u2'] });
      expect((await h.inbox.receive(deposit)).effects).toEqual([{ kind: 'deposit', ids: 2 }]);
      expect((await h.inbox.receive(deposit)).replay).toBe(true);
      expect(await h.events()).toEqual(['msg-1 applied -> a', 'msg-2 applied -> -']);
      expect(await h.count('custody_ids')).toBe(2);
      expect(await h.feed()).toEqual(['a queued', 'a accepted', 'a rejected']);
    });

    it('a deposit naming an id twice puts it in custody once; a later deposit of the same ids upserts them', async () => {
      const twice = webhook('dep-1', { type: 'custody.deposit', unitIds: ['u1', 'u2', 'u1'] });
      expect((await h.inbox.receive(twice)).effects).toEqual([{ kind: 'deposit', ids: 2 }]);
      const again = webhook('dep-2', { type: 'custody.deposit', unitIds: ['u2', 'u1'] });
      expect((await h.inbox.receive(again)).effects).toEqual([{ kind: 'deposit', ids: 2 }]);
      expect(await h.count('custody_ids')).toBe(2);
      expect(await h.events()).toEqual(['dep-1 applied -> -', 'dep-2 applied -> -']);
    });

    it('the same id with another body is a new fact: stored, flagged and acted on', async () => {
      await accept(h.ops, 'a');
      await accept(h.ops, 'b');
      await h.inbox.receive(webhook('msg-1', decision('a', 'approved')));
      const reused = await h.inbox.receive(webhook('msg-1', decision('b', 'approved')));
      expect(reused.outcome).toBe('applied');
      expect(reused.idReused).toBe(true);
      expect(reused.effects.map((e) => e.kind)).toEqual(['approved', 'id-reused']);
      expect(await h.events()).toEqual(['msg-1 applied -> a', 'msg-1 applied reused -> b']);
      expect(await h.rows()).toEqual(['a approved', 'b approved']);
    });

    it('a decision before its row is kept pending, then applied when the row is accepted', async () => {
      // Before the row exists, and again while it is only queued.
      const early = await h.inbox.receive(
        webhook('msg-1', decision('a', 'rejected', 'Alice Liddell is blocked')),
      );
      expect(early).toEqual({ outcome: 'pending', replay: false, idReused: false, effects: [] });
      // Accepted: the dispatcher's hook masks the row's values in its events and applies the decision.
      const a = await accept(h.ops, 'a');
      const effects = await h.inbox.afterAccepted(
        { id: a, ref: 'a', mask: personalMasker(['Alice Liddell']) },
        T2,
      );
      expect(effects).toEqual([{ kind: 'rejected', ref: 'a', outboxId: a, reason: '[redacted] is blocked' }]);
      expect((await h.texts())[0]?.reason).toBe('[redacted] is blocked');
      expect((await h.texts())[0]?.body).not.toContain('Alice');

      // Accepted by another path: the maintenance sweep applies it.
      await queue(h.ops, 'b');
      expect((await h.inbox.receive(webhook('msg-2', decision('b', 'approved')))).outcome).toBe('pending');
      expect(await h.events()).toEqual(['msg-1 applied -> a', 'msg-2 pending -> b']);
      const claimed = await h.ops.claim({
        owner: 'me',
        now: T2,
        leaseUntil: '2026-03-01T13:00:00.000Z',
        limit: 5,
      });
      expect(claimed.map((r) => r.marketplaceTransactionRef)).toEqual(['b']);
      await h.ops.settle(
        { id: claimed[0]!.id, ref: 'b', owner: 'me', now: T2 },
        { startedAt: T2, durationMs: 1, statusCode: 202, error: null },
        { to: 'accepted', response: '{}', status: 202 },
      );
      await h.inbox.recordRejection('2026-01-01T00:00:00.000Z', 401, 'bad signature');
      await h.inbox.recordRejection(T2, 401, 'bad signature');
      const swept = await h.inbox.maintain(T2, T1);
      expect(swept).toEqual({
        effects: [{ kind: 'approved', ref: 'b', outboxId: claimed[0]!.id }],
        pruned: 1,
      });
      expect(await h.count('webhook_rejections')).toBe(1);
      expect(await h.events()).toEqual(['msg-1 applied -> a', 'msg-2 applied -> b']);
      expect(await h.rows()).toEqual(['a rejected', 'b approved']);
      expect(await h.inbox.maintain(T2, T1)).toEqual({ effects: [], pruned: 0 });
    });

    it('a second, contrary decision is a conflict: recorded, listed for status, the row unchanged', async () => {
      const id = await accept(h.ops, 'a');
      await h.inbox.receive(webhook('msg-1', decision('a', 'approved')));
      const contrary = await h.inbox.receive(webhook('msg-2', decision('a', 'rejected'), T2));
      expect(contrary.outcome).toBe('conflict');
      expect(contrary.effects).toEqual([
        {
          kind: 'conflict',
          ref: 'a',
          outboxId: id,
          decision: 'rejected',
          standing: 'approved',
          webhookId: 'msg-2',
        },
      ]);
      expect((await h.inbox.receive(webhook('msg-3', decision('a', 'approved')))).outcome).toBe('duplicate');
      expect(await h.inbox.decisionConflicts()).toEqual([
        {
          id: 2,
          webhook_id: 'msg-2',
          marketplaceTransactionRef: 'a',
          decision: 'rejected',
          received_at: T2,
          outbox_id: id,
        },
      ]);
      expect(await h.rows()).toEqual(['a approved']);
      expect(await h.feed()).toEqual(['a queued', 'a accepted', 'a approved']);
    });

    it('undecided events are kept, then read again with a vocabulary that knows their word', async () => {
      await accept(h.ops, 'a');
      await queue(h.ops, 'q');
      const undecided = await h.inbox.receive(webhook('msg-1', decision('a', 'ok')));
      expect(undecided.outcome).toBe('undecided');
      await h.inbox.receive(webhook('msg-2', decision('q', 'ok')));
      await h.inbox.receive(webhook('msg-3', decision('a', 'maybe')));
      expect(await h.events()).toEqual([
        'msg-1 undecided -> a',
        'msg-2 undecided -> q',
        'msg-3 undecided -> a',
      ]);

      const same = compileVocabulary(WEBHOOK_CONFIG.decisions);
      expect(await h.inbox.rereadUndecided(WEBHOOK_CONFIG.fields, same, T2)).toEqual({
        resolved: 0,
        effects: [],
      });
      const knowing = compileVocabulary({ ...WEBHOOK_CONFIG.decisions, approved: ['approved', 'ok'] });
      const reread = await h.inbox.rereadUndecided(WEBHOOK_CONFIG.fields, knowing, T2);
      expect(reread.resolved).toBe(2);
      expect(reread.effects.map((e) => e.kind)).toEqual(['approved']);
      expect(await h.events()).toEqual(['msg-1 applied -> a', 'msg-2 pending -> -', 'msg-3 undecided -> a']);
      expect(await h.rows()).toEqual(['a approved', 'q queued']);
    });
  });
}
