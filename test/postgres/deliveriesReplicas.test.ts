import { existsSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/common/log.js';
import { noopMetrics } from '../../src/common/metrics.js';
import { loadConfig } from '../../src/config/config.js';
import { createAppContext } from '../../src/context.js';
import { ChangeSignal } from '../../src/db/changeSignal.js';
import { stateChanged } from '../../src/operations/stateChanged.js';
import { listenForChanges } from '../../src/postgres/changeListener.js';
import { holdLiveness, releaseDeadPg } from '../../src/postgres/liveness.js';
import { inPgTransaction, openPostgres, type PgDatabase } from '../../src/postgres/open.js';
import { PgOperationsStore } from '../../src/postgres/operationsStore.js';
import { drivePostgres, postgresScriptStore } from '../../src/postgres/scripts.js';
import { DeliveriesStore } from '../../src/subscribers/deliveriesStore.js';
import { deliveriesSink } from '../../src/subscribers/deliverySinks.js';
import { createSubscriberComponent } from '../../src/subscribers/dispatcher.js';
import { subscribersFromConfig } from '../../src/subscribers/subscribers.js';
import { tempDir } from '../helpers/context.js';
import { useTestPgDatabase } from '../helpers/pgDatabase.js';
import { SUB_SECRET, subscribersToml, TestSubscriber, until } from '../subscribers/harness.js';

/**
 * Subscriber deliveries on one PostgreSQL database shared by replicas: real dispatchers (each on a
 * pool of its own, under its own lease owner) sending to real loopback receivers, while several
 * writers commit state changes through the one writer path (operations/stateChanged.ts). Every row
 * arrives exactly once, in id order per subscriber; a dead replica's claims come back through
 * releaseOwner; the change feed's signal wakes an idle dispatcher. No SQLite file is ever made.
 */

const pg = useTestPgDatabase();
const NAMES = ['s1', 's2', 's3'];

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
  await pg.db.pool.query(
    'TRUNCATE outbox, outbox_attempts, changes, deliveries, replicas RESTART IDENTITY CASCADE',
  );
});

async function receivers(): Promise<TestSubscriber[]> {
  const subs = NAMES.map(() => new TestSubscriber(SUB_SECRET));
  for (const s of subs) {
    await s.up();
    cleanups.push(() => s.down());
  }
  return subs;
}

/** Where the configurations' database.path points: a folder nothing may create. */
const neverDirs: string[] = [];

/** A configuration naming the receivers (small backoffs: a retry comes within ms). */
function configFor(subs: readonly TestSubscriber[], overrides: Record<string, unknown> = {}) {
  const { dir, cleanup } = tempDir('vcu-sync-pgsubs-');
  cleanups.push(cleanup);
  const file = path.join(dir, 'vcu-sync.toml');
  writeFileSync(
    file,
    subscribersToml(subs.map((s, i) => ({ name: NAMES[i], url: s.url, secret: SUB_SECRET }))),
  );
  neverDirs.push(path.join(dir, 'db'));
  return loadConfig({
    file,
    env: { VCU_SYNC_DB: path.join(dir, 'db', 'never.db') },
    overrides: {
      'subscriber_delivery.poll_ms': 10,
      'subscriber_delivery.backoff_base_ms': 5,
      'subscriber_delivery.backoff_cap_ms': 20,
      'subscriber_delivery.max_attempts': 10_000,
      ...overrides,
    },
  });
}

/** The PostgreSQL store, counting the rows it claims. */
class CountingStore extends DeliveriesStore {
  claimed = 0;
  /** Claims made, found rows or not. */
  calls = 0;
  override async claim(given: Parameters<DeliveriesStore['claim']>[0]) {
    const rows = await super.claim(given);
    this.calls++;
    this.claimed += rows.length;
    return rows;
  }
}

/** A replica's dispatcher: its own pool, its own owner. */
async function replica(config: ReturnType<typeof configFor>, owner: string, signal?: ChangeSignal) {
  const db = await openPostgres(pg.database.url, { migrate: false });
  cleanups.push(() => db.close());
  const ctx = createAppContext(config, silentLogger, { metrics: noopMetrics() });
  const store = new CountingStore(postgresScriptStore(db.pool));
  const component = createSubscriberComponent(ctx, { store, owner, ...(signal ? { wakeOn: signal } : {}) });
  await component.start();
  cleanups.push(() => component.stop());
  return { db, store, component };
}

/**
 * Commits `accepted` for each ref, `perTx` refs to a transaction, on `db`: the outbox rows first,
 * then the state change through the writer every store uses (deliveries + feed, one transaction).
 */
async function accept(
  db: PgDatabase,
  config: ReturnType<typeof configFor>,
  refs: readonly string[],
  perTx = 3,
) {
  const deliveries = deliveriesSink(subscribersFromConfig(config));
  const at = new Date().toISOString();
  await new PgOperationsStore(db.pool).insert(
    refs.map((ref) => ({ ref, operationType: 'Transfer', orderKey: null, body: '{}', hash: `h-${ref}` })),
    at,
  );
  for (let i = 0; i < refs.length; i += perTx) {
    const batch = refs.slice(i, i + perTx);
    await inPgTransaction(db.pool, (client) =>
      drivePostgres(
        client,
        stateChanged(
          batch.map((ref) => ({ ref, from: 'sending' as const, to: 'accepted' as const, at })),
          deliveries,
        ),
      ),
    );
  }
}

/** Each subscriber's webhook ids in id order, as stored. */
async function storedOrder(): Promise<Record<string, string[]>> {
  const { rows } = await pg.db.pool.query<{ subscriber: string; ids: string[] }>(
    'SELECT subscriber, array_agg(webhook_id ORDER BY id) AS ids FROM deliveries GROUP BY subscriber ORDER BY subscriber',
  );
  return Object.fromEntries(rows.map((r) => [r.subscriber, r.ids]));
}

const arrived = (s: TestSubscriber) => s.received.filter((r) => r.verified !== undefined).map((r) => r.id);

/** Rows not delivered yet. */
async function undelivered(): Promise<number> {
  const { rows } = await pg.db.pool.query<{ n: string }>(
    "SELECT count(*) AS n FROM deliveries WHERE state <> 'delivered'",
  );
  return Number(rows[0]!.n);
}

/** Polls an async condition (real time bounds it only as a safety net). */
async function untilAsync(condition: () => Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** Every receiver got exactly the stored rows of its subscriber, in id order, each once. */
async function expectExactlyOnceInOrder(subs: readonly TestSubscriber[], perSubscriber: number) {
  await until(
    () => subs.every((s) => arrived(s).length >= perSubscriber),
    `${perSubscriber} at each subscriber`,
  );
  await untilAsync(async () => (await undelivered()) === 0, 'every row delivered');
  const order = await storedOrder();
  subs.forEach((s, i) => {
    expect(order[NAMES[i]!]).toHaveLength(perSubscriber);
    expect(arrived(s)).toEqual(order[NAMES[i]!]);
  });
  for (const dir of neverDirs) expect(existsSync(dir)).toBe(false);
}

describe('subscriber deliveries on PostgreSQL, two replicas', () => {
  it('two dispatchers deliver every row of 3 subscribers exactly once, in id order per subscriber, while 4 writers commit', async () => {
    const subs = await receivers();
    const config = configFor(subs);
    const a = await replica(config, 'replica-a');
    const b = await replica(config, 'replica-b');
    const writers: PgDatabase[] = [];
    for (let w = 0; w < 4; w++) {
      const db = await openPostgres(pg.database.url, { migrate: false });
      cleanups.push(() => db.close());
      writers.push(db);
    }
    const perWriter = 30;
    await Promise.all(
      writers.map((db, w) =>
        accept(
          db,
          config,
          Array.from({ length: perWriter }, (_, i) => `w${w}-${i}`),
        ),
      ),
    );
    const total = writers.length * perWriter;
    await expectExactlyOnceInOrder(subs, total);
    // Each row claimed once, by one replica or the other: nothing was taken twice.
    expect(a.store.claimed + b.store.claimed).toBe(total * NAMES.length);
    for (const s of subs) expect(s.received).toHaveLength(total);
  });
});

describe('subscriber deliveries on PostgreSQL, failures and wake-ups', () => {
  it('a subscriber down then up: the others go on meanwhile, then it gets every row once, in order', async () => {
    const subs = await receivers();
    const config = configFor(subs);
    await subs[1]!.down();
    await replica(config, 'replica-a');
    await replica(config, 'replica-b');
    await accept(
      pg.db,
      config,
      Array.from({ length: 20 }, (_, i) => `r${i}`),
    );
    await until(() => arrived(subs[0]!).length === 20 && arrived(subs[2]!).length === 20, 's1 and s3 served');
    // s2's head is being retried (refused connections), and nothing behind it has gone.
    await untilAsync(async () => {
      const { rows } = await pg.db.pool.query<{ attempts: number }>(
        "SELECT attempts FROM deliveries WHERE subscriber = 's2' ORDER BY id LIMIT 1",
      );
      return (rows[0]?.attempts ?? 0) >= 3;
    }, 's2 retried');
    const s2 = await pg.db.pool.query<{ state: string }>(
      "SELECT DISTINCT state FROM deliveries WHERE subscriber = 's2'",
    );
    expect(s2.rows.map((r) => r.state)).not.toContain('delivered');
    expect(s2.rows.map((r) => r.state)).toContain('pending');
    await subs[1]!.up();
    await expectExactlyOnceInOrder(subs, 20);
  });

  it('releaseOwner hands back a dead replica’s claims (found by releaseDeadPg) and another replica delivers them', async () => {
    const subs = await receivers();
    const config = configFor(subs);
    const dead = await holdLiveness(pg.db.pool, {
      owner: 'dead-replica',
      name: 'x',
      holds: 'subscribers',
      now: new Date().toISOString(),
    });
    cleanups.push(() => dead.close().catch(() => {}));
    await accept(
      pg.db,
      config,
      Array.from({ length: 10 }, (_, i) => `r${i}`),
    );
    // The replica claims every subscriber's rows for an hour, then dies.
    const deadStore = new DeliveriesStore(postgresScriptStore(pg.db.pool));
    const now = new Date().toISOString();
    const leaseUntil = new Date(Date.now() + 3_600_000).toISOString();
    for (const subscriber of NAMES) {
      const rows = await deadStore.claim({ subscriber, owner: 'dead-replica', now, leaseUntil, limit: 64 });
      expect(rows).toHaveLength(10);
    }
    const b = await replica(config, 'replica-b');
    // B has looked (every lane, twice) and found nothing it may send: the dead replica holds the heads.
    await until(() => b.store.calls >= 6, 'replica-b claimed');
    expect(b.store.claimed).toBe(0);
    expect(subs.map((s) => s.received.length)).toEqual([0, 0, 0]);
    await pg.db.pool.query('SELECT pg_terminate_backend($1)', [dead.pid]);
    const released: Array<[string, number]> = [];
    await untilAsync(async () => {
      await releaseDeadPg(pg.db.pool, 'replica-b', async (owner) => {
        released.push([owner, await b.store.releaseOwner(owner, new Date().toISOString())]);
        return [];
      });
      return released.length > 0;
    }, 'the dead replica found');
    expect(released).toEqual([['dead-replica', 30]]);
    await expectExactlyOnceInOrder(subs, 10);
    const attempts = await pg.db.pool.query<{ max: number }>('SELECT max(attempts) AS max FROM deliveries');
    expect(attempts.rows[0]!.max).toBe(1);
  });

  it('a claimant of deliveries with no liveness session at all is found dead by releaseDeadPg too', async () => {
    const subs = await receivers();
    const config = configFor(subs);
    await accept(pg.db, config, ['r0', 'r1']);
    const now = new Date().toISOString();
    const leaseUntil = new Date(Date.now() + 3_600_000).toISOString();
    const ghost = new DeliveriesStore(postgresScriptStore(pg.db.pool));
    expect(await ghost.claim({ subscriber: 's1', owner: 'ghost', now, leaseUntil, limit: 64 })).toHaveLength(
      2,
    );
    const released: Array<[string, number]> = [];
    await releaseDeadPg(pg.db.pool, 'me', async (owner) => {
      released.push([owner, await ghost.releaseOwner(owner, now)]);
      return [];
    });
    expect(released).toEqual([['ghost', 2]]);
  });

  it('the change feed’s signal wakes an idle dispatcher: a new row goes out with the poll an hour away', async () => {
    const subs = await receivers();
    const config = configFor(subs, { 'subscriber_delivery.poll_ms': 3_600_000 });
    const signal = new ChangeSignal();
    const listener = listenForChanges({ pool: pg.db.pool, signal });
    cleanups.push(() => listener.stop());
    await listener.ready();
    const a = await replica(config, 'replica-a', signal);
    await until(() => a.store.calls >= NAMES.length, 'every lane looked once');
    expect(a.store.claimed).toBe(0);
    await accept(pg.db, config, ['woken']);
    await expectExactlyOnceInOrder(subs, 1);
    expect(a.store.claimed).toBe(NAMES.length);
  });
});
