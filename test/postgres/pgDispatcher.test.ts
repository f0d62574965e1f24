import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { openPostgres, type PgDatabase } from '../../src/db/pg.js';
import { PgOperationsStore } from '../../src/operations/pgStore.js';
import { createDispatcherComponent } from '../../src/outbox/dispatcher.js';
import { prepareInsert } from '../../src/outbox/enqueue.js';
import { type Simulator, startSimulator } from '../../src/simulator/index.js';
import { testContext } from '../helpers/context.js';
import { createTestDatabase, type TestDatabase } from '../helpers/postgres.js';
import { tokenization } from '../outbox/fixtures.js';

/**
 * The real Dispatcher on the PostgreSQL operations store, sending to the simulator over loopback:
 * the dispatcher's claims, settles, refills and idle waits all go through the store seam, and the
 * SQLite file of its context is never written.
 */

const OPERATIONS = 200;
const UNITS = 10;
const OWNER = 'pg-dispatcher-1';

const cluster = inject('postgres');
let database: TestDatabase;
let pgDb: PgDatabase;
let sim: Simulator;
beforeAll(async () => {
  database = await createTestDatabase(cluster);
  pgDb = await openPostgres(database.url);
  sim = await startSimulator({ webhook: { policy: 'none' } });
});
afterAll(async () => {
  await sim?.close();
  await pgDb?.close();
  await database?.drop();
});

/** Row counts by state, plus rows still holding a lease. */
async function outboxState(): Promise<{ byState: Record<string, number>; leased: number }> {
  const { rows } = await pgDb.pool.query<{ state: string; n: string }>(
    'SELECT state, count(*) AS n FROM outbox GROUP BY state',
  );
  const leased = await pgDb.pool.query<{ n: string }>(
    'SELECT count(*) AS n FROM outbox WHERE lease_owner IS NOT NULL OR lease_until IS NOT NULL',
  );
  return {
    byState: Object.fromEntries(rows.map((r) => [r.state, Number(r.n)])),
    leased: Number(leased.rows[0]?.n),
  };
}

describe('Dispatcher on the PostgreSQL store', () => {
  it(`delivers ${OPERATIONS} operations exactly once each, in order per unit, leaving no claim`, async () => {
    const clock = new ManualClock(Date.parse('2026-03-01T00:00:00.000Z'));
    const ctx = testContext({
      clock,
      overrides: {
        'operator.url': sim.url,
        'operator.api_key': 'sim-api-key',
        'operator.rate_per_second': 100_000,
        'operator.timeout_ms': 5_000,
        'outbox.poll_ms': 5,
        'outbox.concurrency': 8,
      },
    });
    const store = new PgOperationsStore(pgDb.pool, { leaseOwner: OWNER });
    const queued = Array.from({ length: OPERATIONS }, (_, index) => ({
      ref: `pg-disp-${index}`,
      unit: index % UNITS,
      index,
    }));
    const inserted = await store.insert(
      queued.map(({ ref, unit }) => {
        const prepared = prepareInsert(ctx, tokenization(ref, { unitId: 7000 + unit }));
        if ('errors' in prepared) throw new Error(`invalid fixture: ${JSON.stringify(prepared.errors)}`);
        return prepared.params;
      }),
      new Date(clock.now()).toISOString(),
    );
    expect(inserted).toHaveLength(OPERATIONS);

    let commits = 0;
    const component = createDispatcherComponent(ctx, { store, owner: OWNER, onCommitted: () => commits++ });
    try {
      await component.start();
      // Polled, not slept on: every row is due at the clock's time, so no time has to pass.
      const deadline = Date.now() + 45_000;
      while ((await outboxState()).byState.accepted !== OPERATIONS) {
        if (Date.now() > deadline) throw new Error(`not all accepted: ${JSON.stringify(await outboxState())}`);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      const sqliteAttempts = ctx.database.sqlite.prepare('SELECT count(*) FROM outbox_attempts').pluck();
      expect(sqliteAttempts.get()).toBe(0);
    } finally {
      await component.stop();
      ctx.dispose();
    }

    const byRef = new Map(queued.map((q) => [q.ref, q]));
    const received = sim.notifications.filter((n) => n.ref !== undefined && byRef.has(n.ref));
    // Exactly once by ref, every one answered 202.
    expect(received.map((n) => n.ref).sort()).toEqual([...byRef.keys()].sort());
    expect(received.every((n) => n.status === 202)).toBe(true);
    for (let unit = 0; unit < UNITS; unit++) {
      const arrivals = received
        .filter((n) => byRef.get(n.ref as string)?.unit === unit)
        .sort((a, b) => a.seq - b.seq)
        .map((n) => byRef.get(n.ref as string)?.index);
      expect(arrivals).toEqual(queued.filter((q) => q.unit === unit).map((q) => q.index));
    }
    // Nothing left claimed, one attempt logged per row, and the settles were reported.
    expect(await outboxState()).toEqual({ byState: { accepted: OPERATIONS }, leased: 0 });
    const attempts = await pgDb.pool.query<{ n: string; rows: string }>(
      'SELECT count(*) AS n, count(DISTINCT outbox_id) AS rows FROM outbox_attempts',
    );
    expect(attempts.rows[0]).toEqual({ n: String(OPERATIONS), rows: String(OPERATIONS) });
    expect(commits).toBeGreaterThanOrEqual(OPERATIONS);
  });
});
