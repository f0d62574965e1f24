import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { pgHealthReads } from '../../src/health/pgSnapshot.js';
import { silentLogger } from '../../src/log.js';
import { PgOperationsStore } from '../../src/operations/pgStore.js';
import { createDispatcherComponent } from '../../src/outbox/dispatcher.js';
import { prepareInsert } from '../../src/outbox/enqueue.js';
import { PAUSE_KEY } from '../../src/outbox/pause.js';
import { loadPgPauseRecord } from '../../src/outbox/pgPause.js';
import { type Simulator, startSimulator } from '../../src/simulator/index.js';
import { readHealth } from '../../src/status.js';
import { testContext } from '../helpers/context.js';
import { useTestPgDatabase } from '../helpers/pgDatabase.js';
import { until } from '../ops/child.js';
import { tokenization } from '../outbox/fixtures.js';

/**
 * The dispatcher's auth pause on PostgreSQL: a refused key (401/403) pauses sending and records it in the shared
 * `daemon_state`, where status (any replica, or `vcu-sync status`) reads it; the next dispatcher to
 * start picks the pause up, probes, and clears it once the operator takes the key again.
 */

const pgdb = useTestPgDatabase();
let sim: Simulator;
beforeAll(async () => {
  sim = await startSimulator({ webhook: { policy: 'none' } });
});
afterAll(async () => {
  await sim.close();
});

async function storedPause(): Promise<Record<string, unknown> | null> {
  const { rows } = await pgdb.db.pool.query<{ value: string }>(
    'SELECT value FROM daemon_state WHERE key = $1',
    [PAUSE_KEY],
  );
  return rows[0] ? (JSON.parse(rows[0].value) as Record<string, unknown>) : null;
}

/** A dispatcher on the PostgreSQL store with `apiKey`, its pause record on PostgreSQL. */
async function dispatcherWith(apiKey: string) {
  const ctx = testContext({
    clock: new ManualClock(Date.parse('2026-03-01T00:00:00.000Z')),
    overrides: {
      'operator.url': sim.url,
      'operator.api_key': apiKey,
      'operator.rate_per_second': 100_000,
      'outbox.poll_ms': 5,
    },
  });
  const pauseRecord = await loadPgPauseRecord(pgdb.db.pool, silentLogger);
  const store = new PgOperationsStore(pgdb.db.pool, { leaseOwner: `pause-${apiKey}` });
  const component = createDispatcherComponent(ctx, { store, owner: `pause-${apiKey}`, pauseRecord });
  return { ctx, component, store, pauseRecord };
}

describe('the auth pause on PostgreSQL', () => {
  it('a refused key (401/403) pauses sending and records it for every replica; the next start probes and clears it', async () => {
    const refused = await dispatcherWith('wrong-key');
    const prepared = prepareInsert(refused.ctx, tokenization('pause-1', { unitId: 9100 }));
    if ('errors' in prepared) throw new Error('invalid fixture');
    await refused.store.insert([prepared.params], '2026-03-01T00:00:00.000Z');
    await refused.component.start();
    await until('paused', () => refused.component.dispatcher.paused !== null);
    await refused.component.stop();
    await refused.pauseRecord.settled();
    expect([401, 403]).toContain((await storedPause())?.status);
    // Status reads it from PostgreSQL: critical, saying why.
    const health = await readHealth(pgHealthReads(pgdb.db.pool), refused.ctx.config, Date.now());
    expect(health.problems.map((p) => p.code)).toContain('sending-paused');
    const stored = await storedPause();
    refused.ctx.operator().close();
    refused.ctx.dispose();

    const fixed = await dispatcherWith('sim-api-key');
    // Picked up at start, so the first send is a probe rather than business as usual.
    expect(fixed.pauseRecord.read()).toEqual(stored);
    await fixed.component.start();
    await until('accepted and resumed', async () => {
      const { rows } = await pgdb.db.pool.query(
        'SELECT state FROM outbox WHERE "marketplaceTransactionRef" = \'pause-1\'',
      );
      return rows[0]?.state === 'accepted' && fixed.component.dispatcher.paused === null;
    });
    await fixed.component.stop();
    await fixed.pauseRecord.settled();
    expect(await storedPause()).toBeNull();
    fixed.ctx.operator().close();
    fixed.ctx.dispose();
  });
});
