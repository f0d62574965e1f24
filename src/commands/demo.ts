import { mkdirSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { startDaemon } from '../app/daemon.js';
import { openSqliteDaemon } from '../app/sqliteDaemon.js';
import { loadConfig } from '../config.js';
import { UserError } from '../errors.js';
import { createLogger } from '../log.js';
import type { OperationsReads } from '../operations/reads.js';
import { onStopSignals } from '../stopSignals.js';
import { demoOperation } from './demoOperations.js';

/** Options of `vcu-sync demo`. */
export interface DemoOptions {
  /** Folder of the demo database (default: ".vcu-sync-demo"). */
  dir: string;
  /** Stop after this many seconds (default: run until Ctrl-C). */
  seconds?: number | undefined;
}

/** A port that is free now: the preferred one if possible, else one the OS picks. */
async function freePort(preferred: number): Promise<number> {
  const tryListen = (port: number) =>
    new Promise<number | null>((resolve) => {
      const server = net.createServer();
      server.once('error', () => resolve(null));
      server.listen(port, '127.0.0.1', () => {
        const { port: bound } = server.address() as net.AddressInfo;
        server.close(() => resolve(bound));
      });
    });
  return (await tryListen(preferred)) ?? (await tryListen(0)) ?? preferred;
}

/** Longest wait at the end of the demo for operations in flight and their decisions. */
const SETTLE_MS = 15_000;

/**
 * Lets the demo end on a settled state: every queued operation sent, and every decision the
 * simulator scheduled delivered (and so stored: the listener answers 2xx only after the commit).
 * Bounded, so a stuck operator cannot hold Ctrl-C hostage.
 */
async function settle(reads: OperationsReads, webhooksIdle: () => Promise<void>): Promise<void> {
  const deadline = Date.now() + SETTLE_MS;
  while ((await reads.unsentCount()) > 0 && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  // The simulator tracks each decision from the moment it answers /notify.
  await Promise.race([
    webhooksIdle(),
    new Promise((resolve) => setTimeout(resolve, Math.max(0, deadline - Date.now())).unref()),
  ]);
}

/**
 * `vcu-sync demo`: the embedded default. The operator simulator and the daemon on loopback, a local
 * database, a stream of sample operations, and a few lines saying where to look.
 */
export async function runDemoCommand(options: DemoOptions): Promise<number> {
  if (options.seconds !== undefined && !(options.seconds > 0))
    throw new UserError('--seconds: expected a positive number', 64);
  const dir = path.resolve(options.dir);
  mkdirSync(dir, { recursive: true });
  const { startSimulator, DEFAULT_WEBHOOK_SECRET } = await import('../simulator/index.js');
  const [apiPort, webhookPort] = [await freePort(8787), await freePort(8788)];
  const token = `demo-token-${Math.random().toString(36).slice(2, 10)}`;
  const sim = await startSimulator({
    projects: 120,
    issuances: 600,
    units: 20_000,
    // Retried as a real operator would, over tens of seconds (the simulator's default, five tries
    // within a second, is for tests that want it to give up quickly).
    webhook: {
      url: `http://127.0.0.1:${webhookPort}/webhooks/operator`,
      delayMs: 1500,
      maxAttempts: 8,
      retryBaseMs: 200,
    },
  });
  const config = loadConfig({
    env: {},
    overrides: {
      'operator.url': sim.url,
      'operator.api_key': 'sim-api-key',
      'operator.marketplace_id': 'demo-marketplace',
      'operator.rate_per_second': 50,
      'database.path': path.join(dir, 'vcu-sync.db'),
      'database.synchronous': 'normal',
      'api.listen': `127.0.0.1:${apiPort}`,
      'api.token': token,
      'webhook.listen': `127.0.0.1:${webhookPort}`,
      'webhook.secrets': [DEFAULT_WEBHOOK_SECRET],
      'sync.jitter_seconds': 0,
      'log.level': process.env.VCU_SYNC_LOG_LEVEL ?? 'warn',
    },
  });
  const log = createLogger({ level: config.log.level, fd: 2 });
  // A demo already running in this folder owns its database: say so and leave the simulator closed.
  // The demo's database is always a SQLite file of its folder (the demo's own configuration).
  const { ctx, stores } = await openSqliteDaemon(config, log).catch(async (err: unknown) => {
    await sim.close();
    throw err;
  });
  const daemon = await startDaemon(ctx, stores);
  const api = `http://127.0.0.1:${apiPort}`;
  const out = (line = '') => process.stdout.write(`${line}\n`);
  out('vcu-sync demo: operator simulator and daemon running on loopback');
  out(`  status page   ${api}/  (send "Authorization: Bearer ${token}")`);
  out(`  status        curl -s -H 'Authorization: Bearer ${token}' ${api}/status`);
  out(`  mirror        curl -s -H 'Authorization: Bearer ${token}' '${api}/v1/projects?limit=5'`);
  out(`  operations    curl -s -H 'Authorization: Bearer ${token}' ${api}/v1/operations`);
  out(`  database      ${config.database.path}`);
  out(`  try           ${sqliteHint(config.database.path)}`);
  out(`  simulator     ${sim.url}  (admin: ${sim.url}/_sim/stats)`);
  out('Queuing a sample operation every 2 seconds; Ctrl-C stops.');
  out();

  let n = 0;
  // Enqueues still in flight when the demo stops are awaited before it settles: one answered after
  // the settle began would be sent and never see its decision before the daemon stops.
  const inFlight = new Set<Promise<void>>();
  const enqueue = () => {
    const sending = enqueueOne().finally(() => inFlight.delete(sending));
    inFlight.add(sending);
  };
  const enqueueOne = async () => {
    const body = demoOperation(n++, 'demo-marketplace', new Date());
    try {
      const res = await fetch(`${api}/v1/operations`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      if (res.status !== 201) out(`enqueue answered ${res.status}: ${await res.text()}`);
    } catch (err) {
      out(`enqueue failed: ${(err as Error).message}`);
    }
  };
  const report = async () => {
    const states = await stores.outbox.reads.countsByState();
    const mirror = ctx.database.sqlite
      .prepare(
        'SELECT (SELECT count(*) FROM projects) AS p, (SELECT count(*) FROM issuances) AS i, (SELECT count(*) FROM unit_operations) AS u',
      )
      .get() as { p: number; i: number; u: number };
    out(
      `mirror: ${mirror.p} projects, ${mirror.i} issuances, ${mirror.u} unit operations | outbox: ${states.map((s) => `${s.state} ${s.n}`).join(', ') || 'empty'}`,
    );
  };
  const enqueueTimer = setInterval(enqueue, 2000);
  const reportTimer = setInterval(() => void report(), 5000);
  enqueue();

  // Kept until the demo has stopped: under `npm run demo` one Ctrl-C arrives at least twice (the
  // terminal's, then npm's relayed copy; tsx's too when run under tsx), and none may cut the settle short.
  await new Promise<void>((resolve) => {
    onStopSignals({ stop: () => resolve() });
    if (options.seconds !== undefined) setTimeout(resolve, options.seconds * 1000).unref();
  });
  out(`stopping: waiting (up to ${SETTLE_MS / 1000} s) for the operations in flight to be sent and decided`);
  clearInterval(enqueueTimer);
  clearInterval(reportTimer);
  await Promise.all(inFlight);
  await settle(stores.outbox.reads, () => sim.webhooksIdle());
  await report();
  await daemon.stop('demo finished');
  await sim.close();
  await stores.close();
  out(`demo stopped; the database stays in ${config.database.path}`);
  return 0;
}

/**
 * The query the demo suggests, read-only: a `sqlite3` shell left open mid-transaction would hold the
 * daemon's write lock (README "database-locked"); the path quoted for the shell when it needs it.
 */
export function sqliteHint(file: string): string {
  const quoted = /^[\w./-]+$/.test(file) ? file : `'${file.replaceAll("'", "'\\''")}'`;
  return `sqlite3 -readonly ${quoted} "SELECT state, count(*) FROM outbox GROUP BY state"`;
}
