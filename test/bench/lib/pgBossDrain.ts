import http from 'node:http';
import { performance } from 'node:perf_hooks';
import got from 'got';

/**
 * pg-boss used as an outbox, the baseline of the daemon's drain (issue 30): the operations inserted
 * in bulk as jobs, then `fetchers` loops each fetching `batchSize` jobs, POSTing them one at a time
 * to the operator's /notify and completing the batch, until the queue is empty.
 *
 * pg-boss is a devDependency the bench loads when it runs: `BENCH_PGBOSS_MODULE` names where it is
 * installed (a path to its dist/index.js), else the package name. The subset used is typed here.
 */
interface PgBossLike {
  on(event: 'error', listener: (err: unknown) => void): unknown;
  start(): Promise<unknown>;
  stop(options?: { graceful?: boolean; timeout?: number }): Promise<void>;
  createQueue(name: string): Promise<void>;
  insert(name: string, jobs: Array<{ data: object }>): Promise<unknown>;
  fetch<T>(name: string, options: { batchSize: number }): Promise<Array<{ id: string; data: T }>>;
  complete(name: string, ids: string[]): Promise<unknown>;
}

type PgBossClass = new (connectionString: string) => PgBossLike;

/** pg-boss's class, or null (with why) when it is not installed. */
export async function loadPgBoss(): Promise<{ PgBoss: PgBossClass } | { missing: string }> {
  const specifier = process.env.BENCH_PGBOSS_MODULE ?? 'pg-boss';
  try {
    const mod = (await import(specifier)) as { PgBoss?: PgBossClass; default?: PgBossClass };
    const PgBoss = mod.PgBoss ?? mod.default;
    return PgBoss ? { PgBoss } : { missing: `${specifier} exports no PgBoss class` };
  } catch (err) {
    return { missing: `${specifier} not installed (npm install -D pg-boss): ${(err as Error).message}` };
  }
}

/** Options of {@link pgBossDrain}. */
export interface PgBossDrainOptions {
  /** The database pg-boss installs its schema in (a fresh one). */
  url: string;
  notifyUrl: string;
  apiKey: string;
  /** The request bodies, one job each. */
  bodies: readonly string[];
  fetchers: number;
  batchSize: number;
}

/** Inserts the jobs (not timed), then drains them; resolves with the drain's seconds. */
export async function pgBossDrain(PgBoss: PgBossClass, options: PgBossDrainOptions): Promise<number> {
  const boss = new PgBoss(options.url);
  boss.on('error', () => {});
  const agent = new http.Agent({ keepAlive: true, maxSockets: options.fetchers });
  const client = got.extend({
    agent: { http: agent },
    retry: { limit: 0 },
    timeout: { request: 30_000 },
    headers: { apikey: options.apiKey, 'content-type': 'application/json' },
  });
  const queue = 'notify';
  try {
    await boss.start();
    await boss.createQueue(queue);
    await boss.insert(
      queue,
      options.bodies.map((body) => ({ data: { body } })),
    );
    let done = 0;
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: options.fetchers }, async () => {
        for (;;) {
          const jobs = await boss.fetch<{ body: string }>(queue, { batchSize: options.batchSize });
          if (jobs.length === 0) return;
          for (const job of jobs) {
            const res = await client.post(options.notifyUrl, { body: job.data.body, throwHttpErrors: false });
            if (res.statusCode >= 300) throw new Error(`pg-boss baseline POST answered ${res.statusCode}`);
          }
          await boss.complete(
            queue,
            jobs.map((j) => j.id),
          );
          done += jobs.length;
        }
      }),
    );
    const seconds = (performance.now() - t0) / 1000;
    if (done !== options.bodies.length)
      throw new Error(`pg-boss drained ${done} of ${options.bodies.length}`);
    return seconds;
  } finally {
    agent.destroy();
    await boss.stop({ graceful: false, timeout: 5_000 });
  }
}
