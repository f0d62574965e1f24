import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/common/clock.js';
import { REDACTED } from '../../src/common/redact.js';
import { InboxStore } from '../../src/inbox/inboxStore.js';
import type { ClaimParams, OperationsStore } from '../../src/operations/storeSeam.js';
import { createDispatcherComponent } from '../../src/outbox/dispatcher.js';
import type { DispatcherOptions } from '../../src/outbox/dispatcherOptions.js';
import { pauseRecord } from '../../src/outbox/pause.js';
import { prepareInsert } from '../../src/outbox/prepareInsert.js';
import { PgOperationsStore, pgOutboxHooks } from '../../src/postgres/operationsStore.js';
import { postgresScriptStore } from '../../src/postgres/scripts.js';
import { decision, webhook } from '../contract/inboxStores.js';
import { testContext } from '../helpers/context.js';
import { PERSONAL, tokenization } from '../outbox/fixtures.js';
import { usePgOutbox } from './pgOutboxFixture.js';

/**
 * The real Dispatcher on the PostgreSQL operations store, sending to the simulator over loopback:
 * its claims, settles, refills, releases and idle waits all go through the store seam, and the
 * SQLite file of its context gets none of them.
 */

const OWNER = 'pg-dispatcher-1';

const env = usePgOutbox();

/**
 * A dispatcher on the PostgreSQL store, its context on a throwaway SQLite file and a manual clock;
 * `wrapStore` puts a test's seam around the store the dispatcher uses.
 */
function pgDispatcher(
  options: Partial<DispatcherOptions> = {},
  wrapStore: (store: PgOperationsStore) => OperationsStore = (store) => store,
  concurrency = 8,
) {
  const clock = new ManualClock(Date.parse('2026-03-01T00:00:00.000Z'));
  const ctx = testContext({
    clock,
    overrides: {
      'operator.url': env.sim.url,
      'operator.api_key': 'sim-api-key',
      'operator.rate_per_second': 100_000,
      'operator.timeout_ms': 10_000,
      'outbox.poll_ms': 5,
      'outbox.concurrency': concurrency,
    },
  });
  const store = new PgOperationsStore(env.pgDb.pool);
  // As createAppContext's: no SQLite database (the test keeps its own ctx to look into the file).
  const pgCtx: typeof ctx = Object.create(ctx, {
    database: {
      get() {
        throw new Error('the dispatcher reached for a SQLite database on PostgreSQL');
      },
    },
  });
  const component = createDispatcherComponent(pgCtx, {
    store: wrapStore(store),
    hooks: null,
    owner: OWNER,
    ...options,
  });
  /** Queues tokenizations through the same validation as the API, each on its unit. */
  const enqueue = (ops: ReadonlyArray<{ ref: string; unit: number; extra?: Record<string, unknown> }>) =>
    store.insert(
      ops.map(({ ref, unit, extra }) => {
        const prepared = prepareInsert(ctx, tokenization(ref, { unitId: 7000 + unit, ...extra }));
        if ('errors' in prepared) throw new Error(`invalid fixture: ${JSON.stringify(prepared.errors)}`);
        return prepared;
      }),
      new Date(clock.now()).toISOString(),
    );
  return { ctx, component, enqueue };
}

/** Row counts by state, plus rows still holding a lease. */
async function outboxState(): Promise<{ byState: Record<string, number>; leased: number }> {
  const { rows } = await env.pgDb.pool.query<{ state: string; n: string }>(
    'SELECT state, count(*) AS n FROM outbox GROUP BY state',
  );
  const leased = await env.pgDb.pool.query<{ n: string }>(
    'SELECT count(*) AS n FROM outbox WHERE lease_owner IS NOT NULL OR lease_until IS NOT NULL',
  );
  return {
    byState: Object.fromEntries(rows.map((r) => [r.state, Number(r.n)])),
    leased: Number(leased.rows[0]?.n),
  };
}

/** Polls the database until `check` holds; real time bounds it only as a safety net. */
async function waitFor(what: string, check: (s: Awaited<ReturnType<typeof outboxState>>) => boolean) {
  const deadline = Date.now() + 45_000;
  for (;;) {
    const state = await outboxState();
    if (check(state)) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(state)}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('Dispatcher on the PostgreSQL store', () => {
  it('delivers 200 operations exactly once each, in order per unit, leaving no claim', async () => {
    const total = 200;
    const units = 10;
    let commits = 0;
    const { ctx, component, enqueue } = pgDispatcher({ onCommitted: () => commits++ });
    const queued = Array.from({ length: total }, (_, index) => ({
      ref: `pg-disp-${index}`,
      unit: index % units,
      index,
    }));
    expect(await enqueue(queued)).toHaveLength(total);
    try {
      await component.start();
      // Every row is due at the clock's time: no time has to pass, only the sends.
      await waitFor('all accepted', (s) => s.byState.accepted === total);
      const sqliteAttempts = ctx.database.sqlite.prepare('SELECT count(*) FROM outbox_attempts').pluck();
      expect(sqliteAttempts.get()).toBe(0);
    } finally {
      await component.stop();
      ctx.operator().close();
      ctx.dispose();
    }

    const byRef = new Map(queued.map((q) => [q.ref, q]));
    const received = env.sim.notifications.filter((n) => n.ref !== undefined && byRef.has(n.ref));
    // Exactly once by ref, every one answered 202.
    expect(received.map((n) => n.ref).sort()).toEqual([...byRef.keys()].sort());
    expect(received.every((n) => n.status === 202)).toBe(true);
    for (let unit = 0; unit < units; unit++) {
      const arrivals = received
        .filter((n) => byRef.get(n.ref as string)?.unit === unit)
        .sort((a, b) => a.seq - b.seq)
        .map((n) => byRef.get(n.ref as string)?.index);
      expect(arrivals).toEqual(queued.filter((q) => q.unit === unit).map((q) => q.index));
    }
    // Nothing left claimed, one attempt logged per row, and the settles were reported.
    expect(await outboxState()).toEqual({ byState: { accepted: total }, leased: 0 });
    const attempts = await env.pgDb.pool.query<{ n: string; rows: string }>(
      'SELECT count(*) AS n, count(DISTINCT outbox_id) AS rows FROM outbox_attempts',
    );
    expect(attempts.rows[0]).toEqual({ n: String(total), rows: String(total) });
    expect(commits).toBeGreaterThanOrEqual(total);
  });

  it('a row held by an idle transaction does not stall the other units: its settle waits in the background', async () => {
    // A client that updated row A and left its transaction open (chaos `idle_in_tx`).
    const locker = new pg.Client({ connectionString: env.database.url });
    locker.on('error', () => {});
    await locker.connect();
    let lockedA: number | null = null;
    let lockedTries = 0;
    class LockingA extends PgOperationsStore {
      override async settle(...args: Parameters<PgOperationsStore['settle']>) {
        const [claim] = args;
        if (claim.ref === 'pg-idle-A' && lockedA === null) {
          // A was sent and answered: its row is locked before its settle reaches the database.
          await locker.query('BEGIN');
          await locker.query('UPDATE outbox SET updated_at = updated_at WHERE id = $1', [claim.id]);
          lockedA = claim.id;
        }
        if (claim.ref === 'pg-idle-A') lockedTries++;
        return super.settle(...args);
      }
    }
    const store = new LockingA(env.pgDb.pool);
    // One slot: a settle that held it would stop every other unit.
    const { ctx, component, enqueue } = pgDispatcher({ store }, undefined, 1);
    const others = Array.from({ length: 6 }, (_, i) => ({ ref: `pg-idle-${i}`, unit: 10 + i }));
    await enqueue([{ ref: 'pg-idle-A', unit: 1 }]);
    await enqueue(others);
    const rowState = async (ref: string) =>
      (
        await env.pgDb.pool.query<{ state: string }>(
          'SELECT state FROM outbox WHERE "marketplaceTransactionRef" = $1',
          [ref],
        )
      ).rows[0]?.state;
    try {
      await component.start();
      await waitFor('the other units accepted', (s) => s.byState.accepted === others.length);
      // A's settle is still owed (the lock holds), and it kept trying without taking the slot.
      expect(await rowState('pg-idle-A')).toBe('sending');
      expect(lockedTries).toBeGreaterThanOrEqual(1);
      expect(component.dispatcher.owedSettles).toBe(1);
      await locker.query('ROLLBACK');
      await waitFor('A accepted', (s) => s.byState.accepted === others.length + 1);
      expect(component.dispatcher.owedSettles).toBe(0);
    } finally {
      await locker.end();
      await component.stop();
      ctx.operator().close();
      ctx.dispose();
    }
    // A was sent once and settled once: the owed settle kept its lease, nobody sent it again.
    expect(env.sim.notifications.filter((n) => n.ref === 'pg-idle-A')).toHaveLength(1);
    const attempts = await env.pgDb.pool.query<{ n: string }>(
      'SELECT count(*) AS n FROM outbox_attempts WHERE outbox_id = $1',
      [lockedA],
    );
    expect(attempts.rows[0]?.n).toBe('1');
    expect(await outboxState()).toEqual({ byState: { accepted: others.length + 1 }, leased: 0 });
  });

  it('while every slot is busy it waits for a send to end instead of asking the store when a row is due', async () => {
    const concurrency = 8;
    let dueAsked = 0;
    let claimed = 0;
    let askedWhenFull: number | null = null;
    let askedAtFirstSettle: number | null = null;
    class Watching extends PgOperationsStore {
      override nextDueAt() {
        dueAsked++;
        return super.nextDueAt();
      }
      override async claim(...args: Parameters<PgOperationsStore['claim']>) {
        const rows = await super.claim(...args);
        claimed += rows.length;
        if (claimed === concurrency) askedWhenFull ??= dueAsked;
        return rows;
      }
      override settle(...args: Parameters<PgOperationsStore['settle']>) {
        askedAtFirstSettle ??= dueAsked;
        return super.settle(...args);
      }
    }
    const store = new Watching(env.pgDb.pool);
    const { ctx, component, enqueue } = pgDispatcher({ store });
    await enqueue(Array.from({ length: concurrency + 2 }, (_, i) => ({ ref: `pg-busy-${i}`, unit: i })));
    // Slow answers keep all eight slots busy (and more rows due) for a while.
    env.sim.faults.next(concurrency, 'latency', { latencyMs: 300, pathPrefix: '/integration/v1/notify' });
    try {
      await component.start();
      await waitFor('all accepted', (s) => s.byState.accepted === concurrency + 2);
    } finally {
      await component.stop();
      ctx.operator().close();
      ctx.dispose();
    }
    expect(askedWhenFull).not.toBeNull();
    // Between the slots filling and the first answer the loop asked nothing (it used to spin on it).
    expect(askedAtFirstSettle).toBe(askedWhenFull);
  });

  it('a stop past its grace cancels the requests in flight and hands their rows back through the store', async () => {
    const { ctx, component, enqueue } = pgDispatcher({ stopGraceMs: 50 });
    await enqueue([
      { ref: 'pg-slow-1', unit: 1 },
      { ref: 'pg-slow-2', unit: 2 },
    ]);
    env.sim.faults.next(2, 'latency', { latencyMs: 8_000, pathPrefix: '/integration/v1/notify' });
    try {
      await component.start();
      await waitFor('both rows claimed', (s) => s.byState.sending === 2);
      await component.stop();
      // Back in the queue once stop resolves, the unanswered attempt not counted.
      const { rows } = await env.pgDb.pool.query(
        `SELECT "marketplaceTransactionRef" AS ref, state, lease_owner, attempts FROM outbox ORDER BY id`,
      );
      expect(rows).toEqual([
        { ref: 'pg-slow-1', state: 'queued', lease_owner: null, attempts: 0 },
        { ref: 'pg-slow-2', state: 'queued', lease_owner: null, attempts: 0 },
      ]);
    } finally {
      ctx.operator().close();
      ctx.dispose();
    }
  });

  it('with pgOutboxHooks, applies a decision that arrived before its row was accepted right after the accept', async () => {
    // The operator decided before its 202 was recorded (here: before the row was queued), quoting the user.
    const early = await new InboxStore(postgresScriptStore(env.pgDb.pool)).receive(
      webhook('wh-early-1', decision('pg-early-1', 'approved', `ok for ${PERSONAL.originUserName}`)),
    );
    expect(early.outcome).toBe('pending');
    const { ctx, component, enqueue } = pgDispatcher({ hooks: pgOutboxHooks(env.pgDb.pool) });
    await enqueue([{ ref: 'pg-early-1', unit: 1, extra: PERSONAL }]);
    try {
      await component.start();
      await waitFor('the row sent', (s) => !s.byState.queued && !s.byState.sending);
      // Stop waits for the send, its settle and the hook after it; no inbox sweep runs in this test.
      await component.stop();
    } finally {
      ctx.operator().close();
      ctx.dispose();
    }
    // Applied, and the user's name the reason quoted masked once the row's values were known.
    const { rows } = await env.pgDb.pool.query(
      `SELECT o.state, e.outcome, e.reason FROM outbox o JOIN webhook_events e USING ("marketplaceTransactionRef")`,
    );
    expect(rows).toEqual([{ state: 'approved', outcome: 'applied', reason: `ok for ${REDACTED}` }]);
    const feed = await env.pgDb.pool.query(
      "SELECT kind FROM changes WHERE resource = 'operations' ORDER BY seq",
    );
    expect(feed.rows.map((r) => r.kind)).toEqual(['queued', 'accepted', 'approved']);
  });

  it('with pgOutboxHooks, a 401 pause is recorded in PostgreSQL, picked up by the next start and cleared by its probe', async () => {
    const record = pauseRecord(postgresScriptStore(env.pgDb.pool));
    env.sim.faults.next(1, '401', { pathPrefix: '/integration/v1/notify' });
    const first = pgDispatcher({ hooks: pgOutboxHooks(env.pgDb.pool) });
    await first.enqueue([{ ref: 'pg-auth-1', unit: 1 }]);
    try {
      await first.component.start();
      // The record is what `vcu-sync status` on PostgreSQL reads (daemon_state 'outbox.paused').
      for (let i = 0; i < 2_000 && (await record.read()) === null; i++)
        await new Promise((resolve) => setTimeout(resolve, 10));
      // Its clock never moves: no probe goes, the row waits queued with its attempt given back.
      await first.component.stop();
    } finally {
      first.ctx.operator().close();
      first.ctx.dispose();
    }
    expect(await record.read()).toMatchObject({ status: 401 });
    expect(first.component.dispatcher.paused).toMatchObject({ status: 401 });
    expect(await outboxState()).toEqual({ byState: { queued: 1 }, leased: 0 });

    // Another start (or replica) finds the pause, probes at once, and the success clears it for all.
    const second = pgDispatcher({ hooks: pgOutboxHooks(env.pgDb.pool) });
    try {
      await second.component.start();
      await waitFor('the row accepted', (s) => s.byState.accepted === 1);
      await second.component.stop();
    } finally {
      second.ctx.operator().close();
      second.ctx.dispose();
    }
    expect(second.component.dispatcher.paused).toBeNull();
    expect(await record.read()).toBeNull();
    const statuses = env.sim.notifications.filter((n) => n.ref === 'pg-auth-1').map((n) => n.status);
    expect(statuses).toEqual([401, 202]);
  });

  it('a refusal pauses sending before its settle commits: the row, due again at once, is not sent again unpaused', async () => {
    const record = pauseRecord(postgresScriptStore(env.pgDb.pool));
    env.sim.faults.next(1, '401', { pathPrefix: '/integration/v1/notify' });
    // The refused row's settle commits, then its answer is held until the dispatcher is paused or
    // its loop has claimed again: a busy machine's slow round trip, made certain. Paused only after
    // the commit, the loop would claim the row (queued, due now) and send it unpaused.
    let committed = false;
    let claimsAfterCommit = 0;
    let paused: () => boolean = () => false;
    const first = pgDispatcher({ hooks: pgOutboxHooks(env.pgDb.pool) }, (store) => {
      const held: OperationsStore = Object.create(store);
      held.claim = (params) => {
        if (committed) claimsAfterCommit++;
        return store.claim(params);
      };
      held.settle = async (claim, attempt, step) => {
        const settled = await store.settle(claim, attempt, step);
        committed = true;
        while (!paused() && claimsAfterCommit === 0) await new Promise((resolve) => setTimeout(resolve, 5));
        return settled;
      };
      return held;
    });
    paused = () => first.component.dispatcher.paused !== null;
    await first.enqueue([{ ref: 'pg-auth-2', unit: 2 }]);
    try {
      await first.component.start();
      for (let i = 0; i < 2_000 && (await record.read()) === null; i++)
        await new Promise((resolve) => setTimeout(resolve, 10));
      await first.component.stop();
    } finally {
      first.ctx.operator().close();
      first.ctx.dispose();
    }
    expect(committed).toBe(true);
    expect(claimsAfterCommit).toBe(0);
    expect(env.sim.notifications.filter((n) => n.ref === 'pg-auth-2').map((n) => n.status)).toEqual([401]);
    expect(await record.read()).toMatchObject({ status: 401 });
    expect(await outboxState()).toEqual({ byState: { queued: 1 }, leased: 0 });
  });

  it('rows claimed unpaused while a refusal paused sending go back unsent, not out as extra probes', async () => {
    const record = pauseRecord(postgresScriptStore(env.pgDb.pool));
    env.sim.faults.next(1, '401', { pathPrefix: '/integration/v1/notify' });
    // The first claim takes one row (its send is refused); the second, begun before that answer,
    // takes the other and commits, and its answer is held until the refusal has paused sending.
    let claims = 0;
    let paused: () => boolean = () => false;
    const first = pgDispatcher({ hooks: pgOutboxHooks(env.pgDb.pool) }, (store) => {
      const held: OperationsStore = Object.create(store);
      held.claim = async (params) => {
        claims += 1;
        const taken = (): ClaimParams => (typeof params === 'function' ? params() : params);
        if (claims === 1) return store.claim(() => ({ ...taken(), limit: 1 }));
        const rows = await store.claim(params);
        if (claims === 2) while (!paused()) await new Promise((resolve) => setTimeout(resolve, 5));
        return rows;
      };
      return held;
    });
    paused = () => first.component.dispatcher.paused !== null;
    await first.enqueue([
      { ref: 'pg-auth-3', unit: 3 },
      { ref: 'pg-auth-4', unit: 4 },
    ]);
    try {
      await first.component.start();
      for (let i = 0; i < 2_000 && (await record.read()) === null; i++)
        await new Promise((resolve) => setTimeout(resolve, 10));
      await first.component.stop();
    } finally {
      first.ctx.operator().close();
      first.ctx.dispose();
    }
    expect(claims).toBeGreaterThanOrEqual(2);
    // Only the refused request went out; the row claimed meanwhile waits, queued, for the probe.
    expect(
      env.sim.notifications
        .filter((n) => n.ref === 'pg-auth-3' || n.ref === 'pg-auth-4')
        .map((n) => [n.ref, n.status]),
    ).toEqual([['pg-auth-3', 401]]);
    expect(await record.read()).toMatchObject({ status: 401 });
    expect(await outboxState()).toEqual({ byState: { queued: 2 }, leased: 0 });
  });
});
