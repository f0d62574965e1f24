import http from 'node:http';
import got from 'got';
import { commitQueueFor } from '../../src/sqlite/commitQueue.js';
import { DeliveriesStore } from '../../src/subscribers/deliveriesStore.js';
import { createSubscriberComponent } from '../../src/subscribers/dispatcher.js';
import { cancelQueued, enqueueOperation, tokenization } from '../outbox/fixtures.js';
import { SUB_SECRET, subscriberContext } from '../subscribers/harness.js';
import { spawnNode, tsx } from './lib/proc.js';
import { type BenchOptions, ratioOf, type ScenarioResult } from './lib/result.js';
import { timed, until } from './lib/timing.js';

const SYNCHRONOUS = 'full';
/** Rounds the run is cut into, baseline and dispatcher alternating, so a shared machine's drifting load hits both alike. */
const ROUNDS = 10;

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
 * the same bodies to the same receiver, one at a time. In ROUNDS rounds: each writes N/ROUNDS
 * events (not timed), POSTs their bodies with the bare loop, then lets the dispatcher deliver them.
 */
export async function subscribersScenario(options: BenchOptions): Promise<ScenarioResult[]> {
  const n = options.quick ? 500 : 5_000;
  const perRound = Math.ceil(n / ROUNDS);
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
      const { sqlite } = ctx.database;
      const delivered = sqlite
        .prepare("SELECT count(*) AS n FROM deliveries WHERE state = 'delivered'")
        .pluck();
      // One subscriber delivers in order: its last row delivered means the round is done (a point
      // lookup, so polling costs the dispatcher's process next to nothing).
      const stateOf = sqlite.prepare('SELECT state FROM deliveries WHERE id = ?').pluck();
      const bodiesAfter = sqlite.prepare('SELECT body FROM deliveries WHERE id > ? ORDER BY id').pluck();
      let baseSeconds = 0;
      let drainSeconds = 0;
      let written = 0;
      let lastId = 0;
      options.say(`subscribers: ${ROUNDS} rounds of ${perRound} events, bare loop then dispatcher`);
      while (written < n) {
        const count = Math.min(perRound, n - written);
        const bodies = (() => {
          // Written while no dispatcher runs; one starts once the bare loop is done.
          sqlite.transaction(() => {
            for (let i = written; i < written + count; i++) {
              const ref = `bench-sub-${i}`;
              const r = enqueueOperation(
                ctx,
                tokenization(ref, { unitId: 300_000 + i, issuanceId: 400_000 + i }),
              );
              if (r.status !== 201) throw new Error(`enqueue ${i} answered ${r.status}`);
              cancelQueued(ctx, ref);
            }
          })();
          return bodiesAfter.all(lastId) as string[];
        })();
        if (bodies.length !== count)
          throw new Error(`expected ${count} new deliveries, found ${bodies.length}`);
        written += count;
        lastId = Number(sqlite.prepare('SELECT max(id) FROM deliveries').pluck().get());
        baseSeconds += (await timed(() => barePostLoop(url, bodies))).seconds;
        const component = createSubscriberComponent(ctx, {
          store: new DeliveriesStore(commitQueueFor(ctx.database.sqlite)),
        });
        drainSeconds += (
          await timed(async () => {
            await component.start();
            await until('the round delivered', () => stateOf.get(lastId) === 'delivered', 600_000, 2);
          })
        ).seconds;
        await component.stop();
      }
      if (delivered.get() !== n)
        throw new Error(`expected ${n} deliveries delivered, found ${delivered.get()}`);
      const rate = n / drainSeconds;
      const baseRate = n / baseSeconds;
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
          notes: `in-process subscriber dispatcher (signed, durable, in order), bare receiver in a child; one subscriber, sequential; ${ROUNDS} alternating rounds; synchronous=${SYNCHRONOUS}`,
        },
      ];
    } finally {
      ctx.dispose();
    }
  } finally {
    await receiver.stop();
  }
}
