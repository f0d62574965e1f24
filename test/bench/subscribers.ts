import http from 'node:http';
import got from 'got';
import { enqueueOperation } from '../../src/outbox/enqueue.js';
import { cancelOperation } from '../../src/outbox/manage.js';
import { createSubscriberComponent } from '../../src/subscribers/dispatcher.js';
import { tokenization } from '../outbox/fixtures.js';
import { SUB_SECRET, subscriberContext } from '../subscribers/harness.js';
import { spawnNode, tsx } from './lib/proc.js';
import { type BenchOptions, ratioOf, type ScenarioResult } from './lib/result.js';
import { timed, until } from './lib/timing.js';

const SYNCHRONOUS = 'full';

/** The same bodies POSTed one after another (one subscriber is sequential) by a bare got loop. */
async function barePostLoop(url: string, bodies: readonly string[]): Promise<void> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const client = got.extend({
    agent: { http: agent },
    retry: { limit: 0 },
    timeout: { request: 30_000 },
    headers: { 'content-type': 'application/json' },
  });
  try {
    for (const body of bodies) {
      const res = await client.post(url, { body });
      if (res.statusCode >= 300) throw new Error(`baseline POST answered ${res.statusCode}`);
    }
  } finally {
    agent.destroy();
  }
}

/**
 * N deliveries to one subscriber (a bare receiver in a child process) through the subscriber
 * dispatcher (in this process: claim, sign, POST, settle, in order), versus a bare got POST loop of
 * the same bodies to the same receiver, one at a time.
 */
export async function subscribersScenario(options: BenchOptions): Promise<ScenarioResult[]> {
  const n = options.quick ? 500 : 5_000;
  const receiver = spawnNode(tsx('test/bench/children/receiver.ts'));
  try {
    const [, port] = await receiver.waitFor(/listening (\d+)/, 60_000);
    const url = `http://127.0.0.1:${port}/hooks/vcu`;
    const ctx = subscriberContext(
      [{ name: 'bench', url, secret: SUB_SECRET, events: ['operation.cancelled'] }],
      {
        overrides: { 'database.synchronous': SYNCHRONOUS, 'operator.marketplace_id': 'mkt-bench' },
      },
    );
    try {
      options.say(`subscribers: writing ${n} events`);
      ctx.database.sqlite.transaction(() => {
        for (let i = 0; i < n; i++) {
          const ref = `bench-sub-${i}`;
          const r = enqueueOperation(
            ctx,
            tokenization(ref, { unitId: 300_000 + i, issuanceId: 400_000 + i }),
          );
          if (r.status !== 201) throw new Error(`enqueue ${i} answered ${r.status}`);
          cancelOperation(ctx, ref);
        }
      })();
      const bodies = (
        ctx.database.sqlite.prepare('SELECT body FROM deliveries ORDER BY id').all() as { body: string }[]
      ).map((r) => r.body);
      if (bodies.length !== n) throw new Error(`expected ${n} deliveries, found ${bodies.length}`);

      options.say(`subscribers: baseline (${n} POSTs, one at a time)`);
      const base = await timed(() => barePostLoop(url, bodies));

      options.say('subscribers: dispatcher');
      const delivered = ctx.database.sqlite.prepare(
        "SELECT count(*) AS n FROM deliveries WHERE state = 'delivered'",
      );
      const component = createSubscriberComponent(ctx);
      const drain = await timed(async () => {
        await component.start();
        await until('every delivery delivered', () => (delivered.get() as { n: number }).n === n, 600_000, 5);
      });
      await component.stop();
      const rate = n / drain.seconds;
      const baseRate = n / base.seconds;
      const ratio = ratioOf(rate, baseRate)!;
      return [
        {
          scenario: `subscriber deliveries, ${n} events`,
          measure: 'events/s',
          value: rate,
          baseline: baseRate,
          ratio,
          target: '>= 0.7 x baseline',
          met: ratio >= 0.7,
          notes: `in-process subscriber dispatcher (signed, durable, in order), bare receiver in a child; one subscriber, sequential; synchronous=${SYNCHRONOUS}`,
        },
      ];
    } finally {
      ctx.dispose();
    }
  } finally {
    await receiver.stop();
  }
}
