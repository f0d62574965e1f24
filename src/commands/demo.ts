import { mkdirSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { startDaemon } from '../app/daemon.js';
import { openDaemonStores } from '../app/openStores.js';
import { loadConfig } from '../config.js';
import { UserError } from '../errors.js';
import type { Health } from '../health/health.js';
import { createLogger } from '../log.js';
import { UNSENT_STATES } from '../operations/states.js';
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

/** The demo daemon's `GET /status`, read as a user would; null when it does not answer. */
type ReadStatus = () => Promise<Health | null>;

/** How many operations have not reached the operator yet (queued or sending), as /status counts them. */
function unsent(health: Health): number {
  return UNSENT_STATES.reduce((n, state) => n + (health.snapshot.outbox.byState[state] ?? 0), 0);
}

/**
 * Lets the demo end on a settled state: every queued operation sent, and every decision the
 * simulator scheduled delivered (and so stored: the listener answers 2xx only after the commit).
 * Bounded, so a stuck operator cannot hold Ctrl-C hostage.
 */
async function settle(readStatus: ReadStatus, webhooksIdle: () => Promise<void>): Promise<void> {
  const deadline = Date.now() + SETTLE_MS;
  for (let h = await readStatus(); (!h || unsent(h) > 0) && Date.now() < deadline; h = await readStatus()) {
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  // The simulator tracks each decision from the moment it answers /notify.
  await Promise.race([
    webhooksIdle(),
    new Promise((resolve) => setTimeout(resolve, Math.max(0, deadline - Date.now())).unref()),
  ]);
}

/** The demo's progress line: the mirror's records and the outbox's rows by state. */
function progressLine(health: Health): string {
  const records = (resource: string) =>
    health.snapshot.resources.find((r) => r.resource === resource)?.records ?? 0;
  const states = Object.entries(health.snapshot.outbox.byState).map(([state, n]) => `${state} ${n}`);
  return `mirror: ${records('projects')} projects, ${records('issuances')} issuances, ${records('units')} unit operations | outbox: ${states.join(', ') || 'empty'}`;
}

/**
 * `vcu-sync demo`: the embedded default. The operator simulator and the daemon on loopback, a local
 * database, a stream of sample operations, and a few lines saying where to look.
 */
/**
 * When the simulator's projects change shape (or halfway through a demo given `--seconds`), after
 * the start-up syncs made the baseline.
 */
const DRIFT_AFTER_MS = 30_000;

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
  // The demo's database is always a file of its folder (the demo's own configuration).
  const { ctx, stores } = await openDaemonStores(config, log).catch(async (err: unknown) => {
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
  out(`  schema        curl -s -H 'Authorization: Bearer ${token}' '${api}/v1/schema?resource=projects'`);
  out(`  database      ${config.database.path}`);
  out(`  try           ${stores.inspectHint()}`);
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
  const readStatus: ReadStatus = () =>
    fetch(`${api}/status`, { headers: { authorization: `Bearer ${token}` } }).then(
      // 503 is a critical status, still a full answer.
      (res) => (res.status === 200 || res.status === 503 ? (res.json() as Promise<Health>) : null),
      () => null,
    );
  const report = async () => {
    const health = await readStatus();
    if (health) out(progressLine(health));
  };
  // Some time in, the operator's projects change shape (issue 28): a field appears and a status
  // never seen before; the next sync records both, and the status shows upstream-schema-changed.
  const driftTimer = setTimeout(
    () => {
      sim.registry.drift({
        resource: 'projects',
        changes: [
          { kind: 'add-field', field: 'projectRating', value: 'AA' },
          { kind: 'new-value', field: 'projectStatus', value: 'Suspended', share: 0.1 },
        ],
      });
      out("the simulator changed the projects' shape (a new field, a new status): see the schema line above");
      void fetch(`${api}/v1/sync/projects`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}` },
      }).catch(() => {});
    },
    Math.min(DRIFT_AFTER_MS, (options.seconds ?? Number.POSITIVE_INFINITY) * 500),
  );
  driftTimer.unref();
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
  clearTimeout(driftTimer);
  clearInterval(enqueueTimer);
  clearInterval(reportTimer);
  await Promise.all(inFlight);
  await settle(readStatus, () => sim.webhooksIdle());
  await report();
  await daemon.stop('demo finished');
  await sim.close();
  await stores.close();
  out(`demo stopped; the database stays in ${config.database.path}`);
  return 0;
}
