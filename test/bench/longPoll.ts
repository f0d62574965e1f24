import http from 'node:http';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { freePort } from '../helpers/net.js';
import { tokenization } from '../outbox/fixtures.js';
import { BENCH_API_TOKEN, daemonEnv, QUIET_DAEMON_TOML, writeConfig } from './lib/benchConfig.js';
import { cliRunner } from './lib/build.js';
import { spawnNode, waitForHealthz } from './lib/proc.js';
import type { BenchOptions, ScenarioResult } from './lib/result.js';
import { startSimChild } from './lib/simulator.js';
import { quantile } from './lib/timing.js';

const CLIENTS = 200;
const TARGET_MS = 50;

/** One request on the agent; resolves with status, body and the time (performance.now) it ended. */
function request(
  agent: http.Agent,
  port: number,
  method: 'GET' | 'POST',
  pathname: string,
  body?: string,
): Promise<{ status: number; body: string; at: number }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        agent,
        host: '127.0.0.1',
        port,
        method,
        path: pathname,
        headers: {
          authorization: `Bearer ${BENCH_API_TOKEN}`,
          ...(body === undefined
            ? {}
            : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }),
        },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => {
          text += d;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text, at: performance.now() }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/**
 * `vcu-sync run` in a child (dispatcher paused by 401s, so the only change of a round is the one it
 * makes); 200 long-polls `GET /v1/changes?after=HEAD&wait=60` wait on it over keep-alive sockets;
 * then one `POST /v1/operations` commits a `queued` change. Measured per client: from the POST's 201
 * (which the daemon sends once the commit is durable) to its long-poll's answer, both received here
 * over the same loopback, so the difference is the server's wake-up and answer after the commit
 * (negative: answered before the 201). Beside it: from sending the POST (the commit's fsync included).
 */
export async function longPollScenario(options: BenchOptions): Promise<ScenarioResult[]> {
  const rounds = options.quick ? 5 : 30;
  const sim = await startSimChild(['--policy', 'none']);
  const cli = await cliRunner(options.quick, options.say);
  const [apiPort, webhookPort] = [await freePort(), await freePort()];
  const config = writeConfig(options.dir, 'longpoll', `${QUIET_DAEMON_TOML}\n`);
  await sim.admin('POST', '/_sim/faults', {
    kind: '401',
    count: 1_000_000,
    pathPrefix: '/integration/v1/notify',
  });
  const daemon = spawnNode(
    cli.args(['run', '--config', config]),
    daemonEnv({ db: path.join(options.dir, 'longpoll.db'), operatorUrl: sim.url, apiPort, webhookPort }),
  );
  const agent = new http.Agent({ keepAlive: true, maxSockets: CLIENTS + 8 });
  /** Each answer after the enqueue's 201 (sent once its commit was durable): the wake-up. */
  const wakes: number[] = [];
  /** Each answer after sending the enqueue: the wake-up plus the commit. */
  const fromSend: number[] = [];
  const posts: number[] = [];
  try {
    await waitForHealthz(daemon, apiPort);
    options.say(`long-poll: ${CLIENTS} waiting clients, ${rounds} rounds`);
    for (let round = 0; round < rounds + 1; round++) {
      const head = JSON.parse((await request(agent, apiPort, 'GET', '/v1/changes?after=0&limit=1')).body)
        .head as number;
      const polls = Array.from({ length: CLIENTS }, () =>
        // The operations' own rows: the reconciler's findings on earlier rounds' operations may land meanwhile.
        request(agent, apiPort, 'GET', `/v1/changes?after=${head}&wait=60&limit=10&resource=operations`),
      );
      // Let every request reach the server and park (a bench may wait; a test may not).
      await new Promise((r) => setTimeout(r, 300));
      const sent = performance.now();
      const post = await request(
        agent,
        apiPort,
        'POST',
        '/v1/operations',
        JSON.stringify(tokenization(`longpoll-${round}`, { marketplaceId: 'mkt-bench' })),
      );
      if (post.status !== 201) throw new Error(`enqueue answered ${post.status}: ${post.body}`);
      const answers = await Promise.all(polls);
      for (const a of answers) {
        const items = (JSON.parse(a.body) as { items: Array<{ seq: number; recordId: string }> }).items;
        if (a.status !== 200 || items.length !== 1 || items[0]!.recordId !== `longpoll-${round}`) {
          throw new Error(`round ${round}: a long-poll answered ${a.status} ${a.body.slice(0, 200)}`);
        }
      }
      // Round 0 warms up (JIT, statements, sockets).
      if (round === 0) continue;
      posts.push(post.at - sent);
      for (const a of answers) {
        wakes.push(a.at - post.at);
        fromSend.push(a.at - sent);
      }
    }
  } finally {
    agent.destroy();
    await daemon.stop(10_000);
    await sim.close();
  }
  const p99 = quantile(wakes, 0.99);
  return [
    {
      scenario: `long-poll wake-up, ${CLIENTS} waiting clients`,
      measure: 'p99 ms',
      value: p99,
      baseline: null,
      ratio: null,
      target: `< ${TARGET_MS} ms`,
      met: p99 < TARGET_MS,
      notes: `each long-poll's answer after the enqueue's 201 (its commit durable), ${rounds} rounds: p50 ${quantile(wakes, 0.5).toFixed(2)} ms, max ${Math.max(...wakes).toFixed(1)} ms; from sending the enqueue (commit included) p50 ${quantile(fromSend, 0.5).toFixed(2)} ms, p99 ${quantile(fromSend, 0.99).toFixed(2)} ms; the enqueue's round trip p50 ${quantile(posts, 0.5).toFixed(2)} ms, p99 ${quantile(posts, 0.99).toFixed(2)} ms`,
      extra: {
        p50: quantile(wakes, 0.5),
        p99,
        max: Math.max(...wakes),
        fromSendP50: quantile(fromSend, 0.5),
        fromSendP99: quantile(fromSend, 0.99),
        enqueueP50: quantile(posts, 0.5),
        enqueueP99: quantile(posts, 0.99),
        samples: wakes.length,
      },
    },
  ];
}
