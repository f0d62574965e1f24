import { afterAll, beforeAll, beforeEach, describe, expect, inject, it } from 'vitest';
import type { RecordResult } from '../../src/inbox/correlate.js';
import { openPostgres, type PgDatabase } from '../../src/postgres/open.js';
import {
  accept,
  decision,
  type InboxHarness,
  postgresInboxHarness,
  T2,
  webhook,
} from '../contract/inboxStores.js';
import { createTestDatabase, type TestDatabase } from '../helpers/postgres.js';

/**
 * Two replicas on one PostgreSQL database (two pools, two store instances each) receiving webhooks
 * at the same moment: a replay delivered to both is recorded and applied once, contrary decisions
 * on one row are taken one at a time, and a decision received by one replica applies to the row
 * the other queued and had accepted.
 */

const cluster = inject('postgres');
let database: TestDatabase;
let dbA: PgDatabase;
let dbB: PgDatabase;
let a: InboxHarness;
let b: InboxHarness;
beforeAll(async () => {
  database = await createTestDatabase(cluster);
  dbA = await openPostgres(database.url);
  dbB = await openPostgres(database.url);
  a = postgresInboxHarness(dbA);
  b = postgresInboxHarness(dbB);
});
afterAll(async () => {
  await dbA?.close();
  await dbB?.close();
  await database?.drop();
});
beforeEach(async () => {
  await a.reset();
});

const N = 20;
const refs = Array.from({ length: N }, (_, i) => `r${i}`);

describe('inbox store on two replicas', () => {
  it('the same webhook delivered to both at once is recorded and applied once', async () => {
    for (const ref of refs) await accept(a.ops, ref, 'replica-a');
    const deposit = webhook('dep', { type: 'custody.deposit', unitIds: ['u1'] });
    const results = await Promise.all(
      [...refs.map((ref) => webhook(`msg-${ref}`, decision(ref, 'approved'))), deposit].flatMap((event) => [
        a.inbox.receive(event),
        b.inbox.receive(event),
      ]),
    );
    // For each pair, one replica stored and applied it, the other answered a replay.
    const pairs: Array<[RecordResult, RecordResult]> = [];
    for (let i = 0; i < results.length; i += 2) pairs.push([results[i]!, results[i + 1]!]);
    for (const pair of pairs) {
      expect(pair.map((r) => r.replay).sort()).toEqual([false, true]);
      expect(pair.map((r) => r.outcome).sort()).toEqual(['applied', 'duplicate']);
    }
    expect(await a.count('webhook_events')).toBe(N + 1);
    expect(await b.count('custody_ids')).toBe(1);
    expect(await b.rows()).toEqual(refs.map((ref) => `${ref} approved`));
    const approvals = (await a.feed()).filter((f) => f.endsWith(' approved'));
    expect(approvals.sort()).toEqual(refs.map((ref) => `${ref} approved`).sort());
    expect((await b.deliveries()).filter((d) => d.endsWith('approved'))).toHaveLength(N);
  });

  it('contrary decisions on one row at once: one is applied, the other recorded as a conflict', async () => {
    for (const ref of refs) await accept(a.ops, ref, 'replica-a');
    const results = await Promise.all(
      refs.flatMap((ref) => [
        a.inbox.receive(webhook(`yes-${ref}`, decision(ref, 'approved'))),
        b.inbox.receive(webhook(`no-${ref}`, decision(ref, 'rejected'))),
      ]),
    );
    for (let i = 0; i < results.length; i += 2) {
      expect([results[i]!.outcome, results[i + 1]!.outcome].sort()).toEqual(['applied', 'conflict']);
    }
    expect(await a.inbox.decisionConflicts()).toHaveLength(N);
    // Each row moved once: its one decision in the feed.
    const decided = (await b.feed()).filter((f) => / (approved|rejected)$/.test(f));
    expect(decided.map((f) => f.split(' ')[0]).sort()).toEqual([...refs].sort());
  });

  it('a decision received by one replica applies to the row the other queued, also when it came first', async () => {
    const id = await accept(a.ops, 'queued-by-a', 'replica-a');
    expect(await b.inbox.receive(webhook('m1', decision('queued-by-a', 'approved')))).toEqual({
      outcome: 'applied',
      replay: false,
      idReused: false,
      effects: [{ kind: 'approved', ref: 'queued-by-a', outboxId: id }],
    });

    // Before the row exists: kept pending on B, applied once A's row is accepted (B's sweep).
    expect((await b.inbox.receive(webhook('m2', decision('early', 'rejected', 'too late')))).outcome).toBe(
      'pending',
    );
    const early = await accept(a.ops, 'early', 'replica-a');
    const swept = await Promise.all([b.inbox.maintain(T2, T2), a.inbox.maintain(T2, T2)]);
    expect(swept.flatMap((s) => s.effects)).toEqual([
      { kind: 'rejected', ref: 'early', outboxId: early, reason: 'too late' },
    ]);
    expect(await a.events()).toEqual(['m1 applied -> queued-by-a', 'm2 applied -> early']);
    expect(await a.rows()).toEqual(['queued-by-a approved', 'early rejected']);
  });
});
