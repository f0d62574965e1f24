import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { claimOperations } from '../../src/operations/claim.js';
import {
  type GuardFacts,
  nextState,
  OPERATION_EVENTS,
  OPERATION_STATES,
  type OperationEvent,
  type OperationState,
} from '../../src/operations/states.js';
import {
  cancelOperation,
  decide,
  expedite,
  releaseClaim,
  releaseOwnedBy,
  retryFailed,
  settleAttempt,
} from '../../src/operations/transitions.js';
import { driveSqlite } from '../../src/sqlite/commitQueue.js';
import type { Sqlite } from '../../src/sqlite/open.js';
import type { Script } from '../../src/store/script.js';
import { testContext } from '../helpers/context.js';
import { operationByRef } from '../outbox/fixtures.js';

const NOW = '2026-03-01T12:00:00.000Z';
const PAST = '2026-03-01T11:00:00.000Z';
const FUTURE = '2026-03-01T13:00:00.000Z';
const ME = 'host:1:me';

/** Seeds one row in `from` whose columns make each guard fact hold or not (tests may seed directly). */
function seed(sqlite: Sqlite, ref: string, from: OperationState, facts: Required<GuardFacts>): number {
  return (
    sqlite
      .prepare(
        `INSERT INTO outbox (marketplaceTransactionRef, operationType, body, body_hash, state, attempts,
           next_attempt_at, lease_owner, lease_until, created_at, updated_at)
         VALUES (?, 'Transfer', '{}', 'h', ?, 1, ?, ?, ?, ?, ?) RETURNING id`,
      )
      .get(
        ref,
        from,
        facts.due ? PAST : FUTURE,
        facts.ownLease ? ME : 'host:2:other',
        facts.leaseExpired ? PAST : FUTURE,
        PAST,
        PAST,
      ) as { id: number }
  ).id;
}

/** A transition's script run now on this handle. */
const drive = <T>(sqlite: Sqlite, script: Script<T>): T => driveSqlite(sqlite, script);

/** Runs `event` through the store's function for it; whether the store says it moved the row. */
function run(sqlite: Sqlite, event: OperationEvent, id: number, ref: string): boolean {
  const claim = { id, ref, owner: ME, now: NOW };
  const attempt = { startedAt: NOW, durationMs: 5, statusCode: 503, error: 'unavailable' };
  switch (event) {
    case 'claim':
      return (
        driveSqlite(
          sqlite,
          claimOperations({ owner: ME, now: NOW, leaseUntil: FUTURE, limit: 10 }, undefined, false),
        ).length > 0
      );
    case 'accept':
      return drive(
        sqlite,
        settleAttempt(claim, attempt, { to: 'accepted', response: '{}', status: 202 }, undefined),
      );
    case 'requeue':
      return drive(
        sqlite,
        settleAttempt(
          claim,
          attempt,
          {
            to: 'queued',
            nextAttemptAt: FUTURE,
            error: 'unavailable',
            status: 503,
            refund: false,
          },
          undefined,
        ),
      );
    case 'fail':
      return drive(
        sqlite,
        settleAttempt(claim, attempt, { to: 'failed', error: 'bad', status: 422 }, undefined),
      );
    case 'release':
      return drive(sqlite, releaseClaim(claim, undefined));
    case 'approve':
      return drive(sqlite, decide({ id, ref, decision: 'approved', reason: null, now: NOW }, undefined));
    case 'reject':
      return drive(sqlite, decide({ id, ref, decision: 'rejected', reason: 'no', now: NOW }, undefined));
    case 'retry':
      return drive(sqlite, retryFailed({ id, ref }, NOW, undefined));
    case 'expedite':
      return drive(sqlite, expedite(id, NOW));
    case 'cancel': {
      const from = operationByRef(sqlite, ref)!.state;
      return drive(sqlite, cancelOperation({ id, ref, from }, NOW, undefined));
    }
  }
}

const FACTS: Array<Required<GuardFacts>> = [true, false].flatMap((due) =>
  [true, false].flatMap((leaseExpired) => [true, false].map((ownLease) => ({ due, leaseExpired, ownLease }))),
);

describe('the store against the transition table (real SQLite)', () => {
  let ctx: ReturnType<typeof testContext>;
  beforeAll(() => {
    ctx = testContext({ overrides: { 'database.synchronous': 'normal' } });
  });
  afterAll(() => ctx.dispose());

  it('every event on every state, under every guard fact, moves the row exactly as the table says', () => {
    const { sqlite } = ctx.database;
    const mismatches: string[] = [];
    let n = 0;
    for (const event of OPERATION_EVENTS) {
      for (const from of OPERATION_STATES) {
        for (const facts of FACTS) {
          sqlite.prepare('DELETE FROM outbox').run();
          sqlite.prepare('DELETE FROM changes').run();
          const ref = `ref-${n++}`;
          const id = seed(sqlite, ref, from, facts);
          const verdict = nextState(from, event, facts);
          const moved = sqlite.transaction(() => run(sqlite, event, id, ref)).immediate();
          const after = operationByRef(sqlite, ref)!.state;
          const expected = verdict.ok ? verdict.to : from;
          if (moved !== verdict.ok || after !== expected) {
            mismatches.push(
              `${event} on ${from} ${JSON.stringify(facts)}: store moved=${moved} to ${after}, table ${JSON.stringify(verdict)}`,
            );
          }
          // The feed has the state entered, in the same transaction; `sending` is queued to apps.
          const seen = (s: string) => (s === 'sending' ? 'queued' : s);
          const feed = sqlite.prepare('SELECT resource, record_id, kind FROM changes').all();
          const wanted =
            seen(after) !== seen(from) ? [{ resource: 'operations', record_id: ref, kind: after }] : [];
          if (JSON.stringify(feed) !== JSON.stringify(wanted)) {
            mismatches.push(`${event} on ${from} ${JSON.stringify(facts)}: feed ${JSON.stringify(feed)}`);
          }
        }
      }
    }
    expect(n).toBe(OPERATION_EVENTS.length * OPERATION_STATES.length * FACTS.length);
    expect(mismatches).toEqual([]);
  });

  it('the start-up hand-back queues every claim whatever its owner or lease, and touches nothing else', () => {
    const { sqlite } = ctx.database;
    sqlite.prepare('DELETE FROM outbox').run();
    let n = 0;
    for (const from of OPERATION_STATES) {
      for (const facts of FACTS) seed(sqlite, `all-${from}-${n++}`, from, facts);
    }
    const released = drive(sqlite, releaseOwnedBy(null, NOW, undefined));
    expect(released).toHaveLength(FACTS.length);
    const states = sqlite
      .prepare(
        'SELECT state, count(*) AS n, sum(attempts) AS attempts FROM outbox GROUP BY state ORDER BY state',
      )
      .all();
    expect(states).toEqual([
      { state: 'accepted', n: 8, attempts: 8 },
      { state: 'approved', n: 8, attempts: 8 },
      { state: 'cancelled', n: 8, attempts: 8 },
      { state: 'failed', n: 8, attempts: 8 },
      // The eight sending rows came back with their attempt refunded.
      { state: 'queued', n: 16, attempts: 8 },
      { state: 'rejected', n: 8, attempts: 8 },
    ]);
    expect(sqlite.prepare("SELECT count(*) FROM outbox WHERE state = 'sending'").pluck().get()).toBe(0);
  });

  it('a state change rolled back takes its feed row with it', () => {
    const { sqlite } = ctx.database;
    sqlite.prepare('DELETE FROM outbox').run();
    sqlite.prepare('DELETE FROM changes').run();
    const facts = { due: true, leaseExpired: false, ownLease: true };
    const id = seed(sqlite, 'rollback-1', 'accepted', facts);
    expect(() =>
      sqlite.transaction(() => {
        run(sqlite, 'reject', id, 'rollback-1');
        throw new Error('the rest of the transaction failed');
      })(),
    ).toThrow('the rest');
    expect(operationByRef(sqlite, 'rollback-1')!.state).toBe('accepted');
    expect(sqlite.prepare('SELECT count(*) FROM changes').pluck().get()).toBe(0);
  });
});
