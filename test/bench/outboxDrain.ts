import http from 'node:http';
import got from 'got';
import { UNSENT_SQL } from '../../src/db/schema/operationStates.js';
import { createDispatcherComponent } from '../../src/outbox/dispatcher.js';
import { testContext } from '../helpers/context.js';
import { enqueueOperation, sqliteDispatcher, tokenization } from '../outbox/fixtures.js';
import { type BenchOptions, ratioOf, type ScenarioResult } from './lib/result.js';
import { startSimChild } from './lib/simulator.js';
import { timed, until } from './lib/timing.js';

const CONCURRENCY = 8;
const SYNCHRONOUS = 'full';

/** The same bodies, POSTed by a bare got loop with `concurrency` requests in flight. */
async function barePostLoop(url: string, bodies: readonly string[], concurrency: number): Promise<void> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
  const client = got.extend({
    agent: { http: agent },
    retry: { limit: 0 },
    timeout: { request: 30_000 },
    headers: { apikey: 'sim-api-key', 'content-type': 'application/json' },
  });
  let next = 0;
  const worker = async () => {
    while (next < bodies.length) {
      const body = bodies[next++]!;
      const res = await client.post(`${url}/integration/v1/notify`, { body });
      if (res.statusCode >= 300) throw new Error(`baseline POST answered ${res.statusCode}`);
    }
  };
  try {
    await Promise.all(Array.from({ length: concurrency }, worker));
  } finally {
    agent.destroy();
  }
}

/**
 * Drains N queued operations through the dispatcher component (in this process) to the simulator
 * child's /notify, versus a bare got POST loop of the same bodies at the same concurrency.
 */
export async function outboxDrainScenario(options: BenchOptions): Promise<ScenarioResult[]> {
  const n = options.quick ? 500 : 10_000;
  const sim = await startSimChild(['--policy', 'none', '--notify-status', '202']);
  const ctx = testContext({
    overrides: {
      'operator.url': sim.url,
      'operator.api_key': 'sim-api-key',
      'operator.marketplace_id': 'mkt-bench',
      'operator.rate_per_second': 100_000,
      'outbox.concurrency': CONCURRENCY,
      'database.synchronous': SYNCHRONOUS,
    },
  });
  try {
    for (let i = 0; i < n; i++) {
      // Distinct units and issuances: no ordering constraint serializes the queue.
      const result = enqueueOperation(
        ctx,
        tokenization(`bench-drain-${i}`, { unitId: 100_000 + i, issuanceId: 200_000 + i }),
      );
      if (result.status !== 201) throw new Error(`enqueue ${i} answered ${result.status}`);
    }
    const bodies = (
      ctx.database.sqlite.prepare('SELECT body FROM outbox ORDER BY id').all() as { body: string }[]
    ).map((r) => r.body);

    options.say(`outbox drain: baseline (${n} POSTs, concurrency ${CONCURRENCY})`);
    const base = await timed(() => barePostLoop(sim.url, bodies, CONCURRENCY));
    await sim.admin('DELETE', '/_sim/notifications');

    options.say('outbox drain: dispatcher');
    // The wait asks whether any row is still unsent (one probe of the state index) rather than
    // counting them: it runs every 5 ms on the dispatcher's own loop, so it reads one index entry
    // however many rows are left.
    const unsent = ctx.database.sqlite.prepare(
      `SELECT 1 AS n FROM outbox INDEXED BY outbox_state_id_idx WHERE state IN ${UNSENT_SQL} LIMIT 1`,
    );
    const component = createDispatcherComponent(ctx, sqliteDispatcher(ctx));
    const drain = await timed(async () => {
      await component.start();
      await until('every row sent', () => unsent.get() === undefined, 600_000, 5);
    });
    await component.stop();
    const accepted = ctx.database.sqlite.prepare("SELECT count(*) AS n FROM outbox WHERE state = 'accepted'");
    const settled = (accepted.get() as { n: number }).n;
    if (settled !== n) throw new Error(`outbox drain: ${settled} of ${n} accepted`);
    const rate = n / drain.seconds;
    const baseRate = n / base.seconds;
    const ratio = ratioOf(rate, baseRate)!;
    return [
      {
        scenario: `outbox drain, ${n} operations`,
        measure: 'ops/s',
        value: rate,
        baseline: baseRate,
        ratio,
        target: '>= 0.8 x baseline',
        met: ratio >= 0.8,
        notes: `in-process dispatcher, simulator in a child; concurrency ${CONCURRENCY}; synchronous=${SYNCHRONOUS}`,
      },
    ];
  } finally {
    ctx.operator().close();
    ctx.dispose();
    await sim.close();
  }
}
