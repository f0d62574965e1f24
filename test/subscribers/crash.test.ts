import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openSqliteContext } from '../../src/app/sqliteStores.js';
import { silentLogger } from '../../src/common/log.js';
import { loadConfig } from '../../src/config/config.js';
import { type Simulator, startSimulator } from '../../src/simulator/index.js';
import { configuredDeliveriesSink } from '../../src/subscribers/subscribers.js';
import { tempDir } from '../helpers/context.js';
import { daemonEnv, daemonToml, spawnCli, until, untilEvent, writeToml } from '../ops/child.js';
import { cancelQueued, enqueueOperation, transfer } from '../outbox/fixtures.js';
import { SUB_SECRET, subscribersToml, TestSubscriber } from './harness.js';

const TOTAL = 400;

let sim: Simulator;
let sub: TestSubscriber;
const { dir, cleanup } = tempDir('vcu-sync-subs-crash-');

beforeAll(async () => {
  sim = await startSimulator({ webhook: { policy: 'none' } });
  sub = new TestSubscriber();
  // A receiver that takes a moment, so each kill lands while events are still going out.
  sub.answerDelayMs = 5;
  await sub.up();
});
afterAll(async () => {
  await sub.down();
  await sim.close();
  cleanup();
});

describe('subscriber deliveries survive SIGKILL', () => {
  it(`kill -9 twice while ${TOTAL} events go out, restart: every event delivered at least once, in order, none lost`, async () => {
    const configFile = writeToml(
      dir,
      subscribersToml(
        [{ name: 'crash', url: sub.url, secret: SUB_SECRET, events: ['operation.cancelled'] }],
        daemonToml({ onStartup: false }),
      ),
    );
    const env = daemonEnv(dir, sim.url, configFile);
    // The events, written before the daemon starts: each cancel writes its delivery in its transaction.
    const config = loadConfig({ env });
    const ctx = openSqliteContext(config, silentLogger, { onStateChange: configuredDeliveriesSink(config) });
    try {
      for (let i = 0; i < TOTAL; i++) {
        const ref = `crash-${String(i).padStart(4, '0')}`;
        expect(enqueueOperation(ctx, transfer(ref)).status).toBe(201);
        cancelQueued(ctx, ref);
      }
    } finally {
      ctx.database.close();
    }

    for (const killAt of [TOTAL / 4, TOTAL / 2]) {
      const child = spawnCli(['run'], env);
      await untilEvent(child, 'daemon.ready');
      await until(`${killAt} received`, () => sub.received.length >= killAt);
      child.child.kill('SIGKILL');
      await child.exited;
      // The kill came while deliveries were still going out.
      expect(new Set(sub.received.map((r) => r.id)).size).toBeLessThan(TOTAL);
    }
    const last = spawnCli(['run'], env);
    await untilEvent(last, 'daemon.ready');
    const db = openSqliteContext(loadConfig({ env }), silentLogger);
    try {
      const rows = () =>
        db.database.sqlite
          .prepare('SELECT id, webhook_id, ref, state FROM deliveries ORDER BY id')
          .all() as Array<{
          id: number;
          webhook_id: string;
          ref: string;
          state: string;
        }>;
      await until('every delivery settled', () => rows().every((r) => r.state === 'delivered'));
      last.child.kill('SIGTERM');
      expect(await last.exited).toBe(0);

      const all = rows();
      expect(all).toHaveLength(TOTAL);
      expect(sub.received.every((r) => r.verified !== undefined)).toBe(true);
      const got = new Set(sub.received.map((r) => r.id));
      expect(all.filter((r) => !got.has(r.webhook_id))).toEqual([]);
      // In order: the first arrival of each event follows the order the events were written.
      const firstSeen: string[] = [];
      for (const r of sub.received) if (!firstSeen.includes(r.id)) firstSeen.push(r.id);
      expect(firstSeen).toEqual(all.map((r) => r.webhook_id));
      // Duplicates only for what was in flight at a kill (at most a claimed batch each time).
      expect(sub.received.length - TOTAL).toBeLessThanOrEqual(2 * 64);
      const refs = sub.events.map((e) => e.data.marketplaceTransactionRef);
      expect(new Set(refs).size).toBe(TOTAL);
    } finally {
      db.database.close();
    }
  }, 300_000);
});
