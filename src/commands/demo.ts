import { mkdirSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { startDaemon } from '../app/daemon.js';
import { openDaemonStores } from '../app/openStores.js';
import { UserError } from '../common/errors.js';
import { createLogger } from '../common/log.js';
import { loadConfig } from '../config/config.js';
import type { Health } from '../health/health.js';
import { onStopSignals } from '../process/stopSignals.js';
import { type DemoApi, demoApi } from './demoApi.js';
import { demoCandidates, depositPlan, injectInconsistencies, replayBooks } from './demoBooks.js';
import { demoOperation, planDemo, setupOperations } from './demoOperations.js';
import {
  type DemoReconcileDeps,
  finalReconcile,
  findingLine,
  findingsSummary,
  reconcileNow,
} from './demoReconcile.js';

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

/** The marketplace the demo reports as. */
const MARKETPLACE_ID = 'demo-marketplace';

/**
 * The demo's retirement window, hours: 7.2 s, so that the retirement the operator loses shows as a
 * finding within the demo, and longer than the 5 s between the progress line's units syncs, so the
 * daemon's reconciler never sees a retirement the simulator booked as missing before it is mirrored.
 */
const DEMO_RETIRE_WINDOW_HOURS = 0.002;

/**
 * Lets the demo end on a settled state: every queued operation sent, and every decision the
 * simulator scheduled delivered (and so stored: the listener answers 2xx only after the commit).
 * Bounded, so a stuck operator cannot hold Ctrl-C hostage.
 */
async function settle(api: DemoApi, webhooksIdle: () => Promise<void>): Promise<void> {
  const deadline = Date.now() + SETTLE_MS;
  await api.allSent(SETTLE_MS);
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
 * When the simulator's projects change shape and the books are made to disagree (or halfway
 * through a demo given `--seconds`), after the start-up syncs made the baseline.
 */
const HALFWAY_MS = 30_000;

/**
 * `vcu-sync demo`: the embedded default. The operator simulator and the daemon on loopback, a local
 * database, a stream of sample operations with consistent books, four inconsistencies injected
 * halfway, and a few lines saying where to look and what reconciliation found.
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
  const plan = planDemo(demoCandidates(sim.registry));
  const config = loadConfig({
    env: {},
    overrides: {
      'operator.url': sim.url,
      'operator.api_key': 'sim-api-key',
      'operator.marketplace_id': MARKETPLACE_ID,
      'operator.rate_per_second': 50,
      'database.path': path.join(dir, 'vcu-sync.db'),
      'database.synchronous': 'normal',
      'api.listen': `127.0.0.1:${apiPort}`,
      'api.token': token,
      'webhook.listen': `127.0.0.1:${webhookPort}`,
      'webhook.secrets': [DEFAULT_WEBHOOK_SECRET],
      'sync.jitter_seconds': 0,
      'reconcile.retire_window_hours': DEMO_RETIRE_WINDOW_HOURS,
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
  const replayed = await replayBooks(stores.reconciliation, sim.books).catch(async (err: unknown) => {
    await Promise.all([sim.close(), stores.close()]);
    throw err;
  });
  const daemon = await startDaemon(ctx, stores);
  // Kept until the demo has stopped: under `npm run demo` one Ctrl-C arrives at least twice (the
  // terminal's, then npm's relayed copy; tsx's too when run under tsx), and none may cut the settle short.
  let stopping = false;
  const stopRequested = new Promise<void>((resolve) => {
    const stop = () => {
      stopping = true;
      resolve();
    };
    onStopSignals({ stop });
    if (options.seconds !== undefined) setTimeout(stop, options.seconds * 1000).unref();
  });
  const base = `http://127.0.0.1:${apiPort}`;
  const api = demoApi(base, token);
  const curl = (what: string) => `curl -s -H 'Authorization: Bearer ${token}' ${what}`;
  const out = (line = '') => process.stdout.write(`${line}\n`);
  out('vcu-sync demo: operator simulator and daemon running on loopback');
  out(`  status page   ${base}/  (send "Authorization: Bearer ${token}")`);
  out(`  status        ${curl(`${base}/status`)}`);
  out(`  mirror        ${curl(`'${base}/v1/projects?limit=5'`)}`);
  out(`  operations    ${curl(`${base}/v1/operations`)}`);
  out(`  schema        ${curl(`'${base}/v1/schema?resource=projects'`)}`);
  out(`  findings      ${curl(`${base}/v1/reconciliation`)}`);
  out(`  database      ${config.database.path}`);
  out(`  try           ${stores.inspectHint()}`);
  out(`  simulator     ${sim.url}  (admin: ${sim.url}/_sim/stats, books: ${sim.url}/_sim/books)`);
  const reconcileDeps: DemoReconcileDeps = {
    store: stores.reconciliation,
    settings: { reconcile: config.reconcile, decisionWarnHours: config.status.decision_warn_hours },
    api,
  };
  if (replayed > 0)
    out(`The simulator's books were rebuilt from the ${replayed} operations it approved in earlier runs.`);
  const deposited = await depositPlan(sim, plan);
  out(`The operator deposited ${deposited} issuances, with a unit of each, into the marketplace's custody.`);
  out('Queuing a sample operation every 2 seconds; Ctrl-C stops.');
  out();

  // Enqueues still in flight when the demo stops are awaited before it settles: one answered after
  // the settle began would be sent and never see its decision before the daemon stops.
  const inFlight = new Set<Promise<void>>();
  const enqueue = (body: Record<string, unknown>): Promise<void> => {
    const sending = api.enqueue(body).then((problem) => {
      if (problem) out(problem);
    });
    const tracked = sending.finally(() => inFlight.delete(tracked));
    inFlight.add(tracked);
    return tracked;
  };
  let n = 0;
  // Held while the inconsistencies are injected: the retirement the operator loses must be the injected one.
  let held = false;
  const next = () => {
    if (!held) void enqueue(demoOperation(n++, MARKETPLACE_ID, new Date(), plan));
  };
  let reporting: Promise<void> | undefined;
  const report = () => {
    reporting ??= (async () => {
      const reconciled = await reconcileNow(reconcileDeps).catch(() => null);
      const health = await api.status();
      if (health)
        out(
          `${progressLine(health)}${reconciled ? ` | reconciliation: ${findingsSummary(reconciled.open)}` : ''}`,
        );
    })().finally(() => {
      reporting = undefined;
    });
  };
  let injecting: Promise<void> | undefined;
  // Halfway, the operator's projects change shape (issue 28): a field appears and a status never
  // seen before; the next sync records both, and the status shows upstream-schema-changed. And the
  // books are made to disagree in four ways (issue 29), each once.
  const halfwayTimer = setTimeout(
    () => {
      sim.registry.drift({
        resource: 'projects',
        changes: [
          { kind: 'add-field', field: 'projectRating', value: 'AA' },
          { kind: 'new-value', field: 'projectStatus', value: 'Suspended', share: 0.1 },
        ],
      });
      out("the simulator changed the projects' shape (a new field, a new status): see the schema line above");
      void fetch(`${base}/v1/sync/projects`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}` },
      }).catch(() => {});
      held = true;
      injecting = injectInconsistencies({
        sim,
        api,
        plan,
        marketplaceId: MARKETPLACE_ID,
        enqueue,
        enqueued: () => Promise.all(inFlight).then(() => undefined),
        out,
        stopping: () => stopping,
        retireWindowHours: DEMO_RETIRE_WINDOW_HOURS,
      })
        .catch((err: unknown) => {
          out(`injecting the inconsistencies failed: ${(err as Error).message}`);
        })
        .finally(() => {
          held = false;
        });
    },
    Math.min(HALFWAY_MS, (options.seconds ?? Number.POSITIVE_INFINITY) * 500),
  );
  halfwayTimer.unref();
  const enqueueTimer = setInterval(next, 2000);
  const reportTimer = setInterval(report, 5000);
  for (const body of setupOperations(plan, MARKETPLACE_ID, new Date())) void enqueue(body);
  next();

  await stopRequested;
  out(`stopping: waiting (up to ${SETTLE_MS / 1000} s) for the operations in flight to be sent and decided`);
  clearTimeout(halfwayTimer);
  clearInterval(enqueueTimer);
  clearInterval(reportTimer);
  await injecting;
  await reporting;
  await Promise.all(inFlight);
  await settle(api, () => sim.webhooksIdle());
  const health = await api.status();
  if (health) out(progressLine(health));
  await printFindings(reconcileDeps, out, config.database.path);
  await daemon.stop('demo finished');
  await sim.close();
  await stores.close();
  out(`demo stopped; the database stays in ${config.database.path}`);
  return 0;
}

/** The last pass's open findings, one line each, and where to see them again. */
async function printFindings(
  deps: DemoReconcileDeps,
  out: (line?: string) => void,
  database: string,
): Promise<void> {
  const windowMs = DEMO_RETIRE_WINDOW_HOURS * 3_600_000;
  let open: Awaited<ReturnType<typeof finalReconcile>>;
  try {
    open = await finalReconcile(deps, windowMs);
  } catch (err) {
    out(`reconciliation failed: ${(err as Error).message}`);
    return;
  }
  if (open === null) {
    out('reconciliation: the units log could not be synced in time; no pass was run');
    return;
  }
  out(`reconciliation: ${findingsSummary(open)}`);
  for (const f of open) out(findingLine(f));
  out(`  see them again: VCU_SYNC_DB=${database} npx vcu-sync reconcile`);
}
