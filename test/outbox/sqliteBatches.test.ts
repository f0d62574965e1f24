import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { StateChange, StateChangeSink } from '../../src/operations/effects.js';
import type { OperationRow } from '../../src/operations/rows.js';
import { useStateChangeSink } from '../../src/sqlite/changes.js';
import { commitQueueFor } from '../../src/sqlite/commitQueue.js';
import { sqliteInboxStore } from '../../src/sqlite/inboxStore.js';
import { type OpenDatabase, openDatabase } from '../../src/sqlite/open.js';
import { SqliteOperationsStore, sqliteOutboxHooks } from '../../src/sqlite/operationsStore.js';
import { TurnBatch } from '../../src/sqlite/turnBatch.js';
import { deliveriesSink } from '../../src/subscribers/deliverySinks.js';
import { decision, queue, T0, T1, T2, webhook } from '../contract/inboxStores.js';
import { SUBSCRIBERS } from '../contract/operationsStores.js';
import { tempDir } from '../helpers/context.js';

/**
 * The dispatcher's settles, refill claims and accepted rows' inbox side on SQLite, made in one
 * turn (sqlite/dispatcherBatches.ts): one job per kind for the group, with every call's outcome,
 * feed row and delivery as when made one by one.
 */

const LEASE = '2026-03-01T13:00:00.000Z';
const answered = { startedAt: T1, durationMs: 3, statusCode: 202, error: null };

describe('SQLite dispatcher work batched per group commit', () => {
  let database: OpenDatabase;
  let cleanup: () => void;
  /** What each call of the state-change sink was given, as `ref state`. */
  let sinkCalls: string[][];

  beforeEach(() => {
    const dir = tempDir();
    cleanup = dir.cleanup;
    database = openDatabase(path.join(dir.dir, 'batches.db'));
    sinkCalls = [];
    const deliveries = deliveriesSink(SUBSCRIBERS)!;
    const counting: StateChangeSink = (changes: readonly StateChange[]) => {
      sinkCalls.push(changes.map((c) => `${c.ref} ${c.to}`));
      return deliveries(changes);
    };
    useStateChangeSink(database.sqlite, counting);
  });
  afterEach(() => {
    database.close();
    cleanup();
  });

  const values = (text: string) =>
    (database.sqlite.prepare(text).all() as Array<{ v: string }>).map((r) => r.v);
  const feed = () =>
    values("SELECT record_id || ' ' || kind AS v FROM changes WHERE resource = 'operations' ORDER BY seq");
  const deliveries = () => values("SELECT ref || ' ' || event_type AS v FROM deliveries ORDER BY id");
  const rows = () =>
    values(`SELECT "marketplaceTransactionRef" || ' ' || state AS v FROM outbox ORDER BY id`);
  const claimOf = (row: OperationRow, owner = 'me') => ({
    id: row.id,
    ref: row.marketplaceTransactionRef,
    owner,
    now: T2,
  });

  it('settles made in one turn: each its outcome, the feed in call order, one subscriber match for the group', async () => {
    const ops = new SqliteOperationsStore(database.sqlite);
    for (const ref of ['a', 'b', 'c']) await queue(ops, ref);
    const claimed = await ops.claim({ owner: 'me', now: T1, leaseUntil: LEASE, limit: 10 });
    expect(claimed.map((r) => r.marketplaceTransactionRef)).toEqual(['a', 'b', 'c']);
    const [a, b, c] = claimed as [OperationRow, OperationRow, OperationRow];
    sinkCalls = [];

    const outcomes = await Promise.all([
      ops.settle(claimOf(a), answered, { to: 'accepted', response: '{}', status: 202 }),
      // Another claimant's lease: this settle changes nothing and says so.
      ops.settle(claimOf(b, 'someone-else'), answered, { to: 'accepted', response: '{}', status: 202 }),
      ops.settle(
        claimOf(c),
        { ...answered, statusCode: 400, error: 'bad' },
        {
          to: 'failed',
          error: 'bad',
          status: 400,
        },
      ),
    ]);

    expect(outcomes).toEqual([true, false, true]);
    expect(rows()).toEqual(['a accepted', 'b sending', 'c failed']);
    expect(feed()).toEqual(['a queued', 'b queued', 'c queued', 'a accepted', 'c failed']);
    expect(deliveries()).toEqual(['a operation.accepted', 'c operation.failed']);
    // One call of the sink for the group's changes, not one per row.
    expect(sinkCalls).toEqual([['a accepted', 'c failed']]);
    // Every attempt is logged, the one whose lease was lost too (as a settle alone logs it).
    expect(values('SELECT count(*) AS v FROM outbox_attempts')).toEqual([3]);
  });

  it('refill claims made beside the settles take the rows those settles free, each row once', async () => {
    const ops = new SqliteOperationsStore(database.sqlite);
    const insert = (ref: string, orderKey: string | null) =>
      ops.insert([{ ref, operationType: 'Transfer', orderKey, body: '{}', hash: `h-${ref}` }], T0);
    await insert('k-1', 'k');
    await insert('free-1', null);
    await insert('k-2', 'k');
    await insert('free-2', null);
    await insert('free-3', null);
    const first = await ops.claim({ owner: 'me', now: T1, leaseUntil: LEASE, limit: 2 });
    expect(first.map((r) => r.marketplaceTransactionRef)).toEqual(['k-1', 'free-1']);

    // As the dispatcher does on an answer: the settle, then the claim for the freed slot, in one turn.
    const refill = (owner: string) => () => ({ owner, now: T2, leaseUntil: LEASE, limit: 1 });
    const [settledK1, mine, theirs, mineAgain] = await Promise.all([
      ops.settle(claimOf(first[0]!), answered, { to: 'accepted', response: '{}', status: 202 }),
      ops.claim(refill('me')),
      ops.claim(refill('other')),
      ops.claim(refill('me')),
    ]);

    expect(settledK1).toBe(true);
    // k-2 was held behind k-1 until the settle ahead of the claims in the same group.
    expect(mine.map((r) => [r.marketplaceTransactionRef, r.lease_owner])).toEqual([['k-2', 'me']]);
    expect(theirs.map((r) => [r.marketplaceTransactionRef, r.lease_owner])).toEqual([['free-2', 'other']]);
    expect(mineAgain.map((r) => [r.marketplaceTransactionRef, r.lease_owner])).toEqual([['free-3', 'me']]);
    expect(rows()).toEqual([
      'k-1 accepted',
      'free-1 sending',
      'k-2 sending',
      'free-2 sending',
      'free-3 sending',
    ]);
    expect(await ops.claim({ owner: 'me', now: T2, leaseUntil: LEASE, limit: 5 })).toEqual([]);
  });

  it("accepted rows' inbox side in one turn: an early decision applies to its row only, masked", async () => {
    const ops = new SqliteOperationsStore(database.sqlite);
    const inbox = sqliteInboxStore(database.sqlite);
    const hooks = sqliteOutboxHooks(database.sqlite);
    for (const ref of ['a', 'b', 'c']) await queue(ops, ref);
    const early = await inbox.receive(
      webhook('msg-b', decision('b', 'rejected', 'Alice Liddell is blocked')),
    );
    expect(early.outcome).toBe('pending');
    const claimed = await ops.claim({ owner: 'me', now: T1, leaseUntil: LEASE, limit: 10 });
    sinkCalls = [];

    const effects = await Promise.all(
      claimed.map((row) => {
        const settled = ops.settle(claimOf(row), answered, { to: 'accepted', response: '{}', status: 202 });
        return hooks.afterAccepted(row, T2, settled);
      }),
    );

    const b = claimed[1]!;
    expect(effects).toEqual([
      [],
      [{ kind: 'rejected', ref: 'b', outboxId: b.id, reason: '[redacted] is blocked' }],
      [],
    ]);
    expect(rows()).toEqual(['a accepted', 'b rejected', 'c accepted']);
    expect(feed().slice(3)).toEqual(['a accepted', 'b accepted', 'c accepted', 'b rejected']);
    expect(deliveries()).toEqual([
      'a operation.accepted',
      'b operation.accepted',
      'c operation.accepted',
      'b operation.rejected',
    ]);
    expect(sinkCalls).toEqual([['a accepted', 'b accepted', 'c accepted'], ['b rejected']]);
    const stored = database.sqlite.prepare('SELECT body, reason FROM webhook_events').all() as Array<{
      body: string;
      reason: string;
    }>;
    expect(stored).toHaveLength(1);
    expect(stored[0]!.reason).toBe('[redacted] is blocked');
    expect(stored[0]!.body).not.toContain('Alice');
  });

  it('a call that fails in a batch fails alone: its neighbours commit, nothing of the failed batch is left', async () => {
    const { sqlite } = database;
    sqlite.exec('CREATE TABLE names (name TEXT PRIMARY KEY)');
    sqlite.exec("INSERT INTO names VALUES ('taken')");
    const insert = sqlite.prepare('INSERT INTO names VALUES (?)');
    const runs = { many: 0, one: 0 };
    const batch = new TurnBatch<string, string>(
      sqlite,
      commitQueueFor(sqlite),
      {
        many: (names) => {
          runs.many++;
          return names.map((name) => {
            insert.run(name);
            return name;
          });
        },
        one: (name) => {
          runs.one++;
          insert.run(name);
          return name;
        },
      },
      { durable: false },
    );

    const results = await Promise.allSettled([batch.add('x'), batch.add('taken'), batch.add('y')]);

    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(String((results[1] as PromiseRejectedResult).reason)).toMatch(/UNIQUE/);
    // The group was tried as one, then each call alone.
    expect(runs).toEqual({ many: 1, one: 3 });
    expect(values('SELECT name AS v FROM names ORDER BY name')).toEqual(['taken', 'x', 'y']);
    // A call made after the group ran starts the next group.
    expect(await batch.add('z')).toBe('z');
    expect(runs).toEqual({ many: 1, one: 4 });
  });
});
