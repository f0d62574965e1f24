import http from 'node:http';
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import type { NewOperation } from '../../../src/operations/storeSeam.js';
import { openPostgres } from '../../../src/postgres/open.js';
import { PgOperationsStore } from '../../../src/postgres/operationsStore.js';
import { freePort } from '../../helpers/net.js';
import type { TestDatabase } from '../../helpers/postgres.js';
import { tokenization } from '../../outbox/fixtures.js';
import { daemonEnv, QUIET_DAEMON_TOML, RECONCILE_TOML, writeConfig } from './benchConfig.js';
import type { CliRunner } from './build.js';
import { timedRequest } from './feedClients.js';
import { spawnNode, waitForHealthz } from './proc.js';

/** What one drain through the installed daemon measured. */
export interface DaemonDrain {
  operations: number;
  units: number;
  /** Seconds from the first enqueue's request to the last 201 (0 when queued before the daemon started). */
  enqueueSeconds: number;
  /**
   * Seconds to the last row's acceptance (the daemon's own timestamps) from the first row's creation
   * (enqueued through the API) or from the first attempt's start (queued before the daemon started).
   */
  drainSeconds: number;
  /** Transactions the database committed from the first enqueue to the last acceptance. */
  commits: number;
  /** Time spent per wait event of the server's backends, sampled every 50 ms during the drain. */
  waits: string;
}

/** Options of {@link daemonDrain}. */
export interface DaemonDrainOptions {
  cli: CliRunner;
  dir: string;
  tag: string;
  /** The database the daemon runs on (a fresh one: its rows are counted). */
  database: TestDatabase;
  operatorUrl: string;
  /** The operations' bodies (JSON of {@link drainOperations}), POSTed through the API while the daemon drains. */
  bodies?: readonly string[];
  /** Or the operations queued by the store's own insert before the daemon starts (not timed). */
  queued?: readonly NewOperation[];
  /**
   * Distinct units the operations fall on (reported). They and their issuances are put in the
   * mirror's custody first, as a marketplace's are (read by its custody sync long before); otherwise
   * the reconciler would find each one not in custody, a finding and a feed row per unit.
   */
  units: number;
  /** API clients POSTing at once, each one request at a time. */
  clients: number;
  concurrency: number;
}

/** The operations: operation i on unit `i % units` (units and issuances start high, apart from fixtures). */
export function drainOperations(tag: string, operations: number, units: number): Record<string, unknown>[] {
  return Array.from({ length: operations }, (_, i) =>
    tokenization(`${tag}-${i}`, { unitId: 500_000 + (i % units), issuanceId: 600_000 + (i % units) }),
  );
}

/** POSTs every body through `clients` closed-loop clients; throws unless each got 201. */
async function enqueueAll(port: number, bodies: readonly string[], clients: number): Promise<void> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: clients });
  let next = 0;
  try {
    await Promise.all(
      Array.from({ length: clients }, async () => {
        while (next < bodies.length) {
          const body = bodies[next++]!;
          const { status } = await timedRequest(agent, port, 'POST', '/v1/operations', body);
          if (status !== 201) throw new Error(`enqueue answered ${status}`);
        }
      }),
    );
  } finally {
    agent.destroy();
  }
}

/** Samples pg_stat_activity's wait events (other backends than the sampler's) until stopped. */
function sampleWaits(pool: pg.Pool, everyMs: number): { stop(): Promise<string> } {
  const counts = new Map<string, number>();
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      const { rows } = await pool
        .query<{ w: string }>(
          `SELECT coalesce(wait_event_type || ':' || wait_event, 'cpu') || CASE WHEN query LIKE '%pg_advisory_xact_lock($5)%' THEN ' (feed append)' WHEN query LIKE '%from_0%' THEN ' (claim)' WHEN query LIKE '%INSERT INTO outbox %' THEN ' (enqueue)' ELSE '' END AS w
           FROM pg_stat_activity WHERE state = 'active' AND pid <> pg_backend_pid() AND backend_type = 'client backend'`,
        )
        .catch(() => ({ rows: [] as Array<{ w: string }> }));
      for (const r of rows) counts.set(r.w, (counts.get(r.w) ?? 0) + 1);
      await new Promise((r) => setTimeout(r, everyMs));
    }
  })();
  return {
    async stop() {
      stopped = true;
      await loop;
      return [...counts.entries()]
        .sort((a, b) => b[1] - a[1])
        .slice(0, 6)
        .map(([w, n]) => `${w} ${n}`)
        .join(', ');
    },
  };
}

/** Transactions committed in the current database so far (statistics, flushed at each transaction's end). */
async function committed(pool: pg.Pool): Promise<number> {
  const { rows } = await pool.query<{ n: string }>(
    'SELECT xact_commit::text AS n FROM pg_stat_database WHERE datname = current_database()',
  );
  return Number(rows[0]?.n);
}

/**
 * The fresh database as the daemon finds it, in one connection (the schema migrated first): the
 * mirror's custody of units `500000 + u` and issuances `600000 + u` for u < `units` (the ids
 * {@link drainOperations} names), as the custody sync would have read them; and `queued`, if any,
 * queued with the store's own insert, one statement per 500.
 */
async function prepareDatabase(url: string, units: number, queued: readonly NewOperation[]): Promise<void> {
  const db = await openPostgres(url);
  try {
    const now = new Date().toISOString();
    for (const [table, key, base] of [
      ['custody_units', '"unitsOperationID"', 500_000],
      ['custody_issuances', '"issuanceId"', 600_000],
    ] as const) {
      await db.pool.query(
        `INSERT INTO ${table} (${key}, _raw, _hash, _first_seen_at, _last_seen_at)
         SELECT id::text, jsonb_build_object('id', id::text), md5(id::text), $1, $1
         FROM generate_series($2::int, $2::int + $3::int - 1) AS id`,
        [now, base, units],
      );
    }
    const store = new PgOperationsStore(db.pool);
    for (let start = 0; start < queued.length; start += 500)
      await store.insert(queued.slice(start, start + 500), now);
  } finally {
    await db.close();
  }
}

/** The drain's seconds from the database: see {@link DaemonDrain.drainSeconds}. */
const DRAIN_SECONDS = {
  api: 'SELECT extract(epoch FROM max(accepted_at) - min(created_at))::float8 AS s FROM outbox',
  queued: `SELECT extract(epoch FROM (SELECT max(accepted_at) FROM outbox)
             - (SELECT min(started_at) FROM outbox_attempts))::float8 AS s`,
};

/**
 * `vcu-sync run` (the installed command) on PostgreSQL, its dispatcher sending to the operator at
 * `operatorUrl`: the operations POSTed through its API by `clients` clients while it drains, or
 * queued before it starts; resolves once every row is accepted, with the enqueue's and the drain's
 * durations.
 */
export async function daemonDrain(options: DaemonDrainOptions): Promise<DaemonDrain> {
  const operations = options.bodies?.length ?? options.queued?.length ?? 0;
  await prepareDatabase(options.database.url, options.units, options.queued ?? []);
  const [apiPort, webhookPort] = [await freePort(), await freePort()];
  const config = writeConfig(
    options.dir,
    options.tag,
    `${QUIET_DAEMON_TOML}\n[operator]\nrate_per_second = 100000\n[outbox]\nconcurrency = ${options.concurrency}\n${RECONCILE_TOML}`,
  );
  const daemon = spawnNode(options.cli.args(['run', '--config', config]), {
    ...daemonEnv({ db: '', operatorUrl: options.operatorUrl, apiPort, webhookPort }),
    VCU_SYNC_DB: undefined,
    VCU_SYNC_DATABASE_URL: options.database.url,
  });
  const watcher = new pg.Pool({ connectionString: options.database.url, max: 2 });
  watcher.on('error', () => {});
  try {
    await waitForHealthz(daemon, apiPort);
    const commitsBefore = await committed(watcher);
    const waits = sampleWaits(watcher, 50);
    const t0 = performance.now();
    if (options.bodies) await enqueueAll(apiPort, options.bodies, options.clients);
    const enqueueSeconds = options.bodies ? (performance.now() - t0) / 1000 : 0;
    for (;;) {
      const { rows } = await watcher.query<{ n: number }>(
        "SELECT count(*)::int AS n FROM outbox WHERE state = 'accepted'",
      );
      if (rows[0]!.n >= operations) break;
      if (daemon.proc.exitCode !== null) throw new Error(`daemon exited: ${daemon.stderr().slice(-2000)}`);
      if (performance.now() - t0 > 600_000) throw new Error(`drain not done after 600 s (${rows[0]!.n})`);
      await new Promise((r) => setTimeout(r, 50));
    }
    const waited = await waits.stop();
    const commits = (await committed(watcher)) - commitsBefore;
    const { rows } = await watcher.query<{ s: number }>(DRAIN_SECONDS[options.bodies ? 'api' : 'queued']);
    return {
      operations,
      units: options.units,
      enqueueSeconds,
      drainSeconds: rows[0]!.s,
      commits,
      waits: waited,
    };
  } finally {
    await watcher.end();
    await daemon.stop(10_000);
  }
}
