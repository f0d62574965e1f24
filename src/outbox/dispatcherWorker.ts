/**
 * The dispatcher's worker thread (see dispatcherThread.ts): its claims, sends and settles run here,
 * on their own event loop and their own database connection, so an HTTP answer or a commit's fsync
 * of the dispatcher never holds the loop that answers the API and the webhooks.
 *
 * It talks to the main thread only by messages: wake and stop come in; log lines (already redacted
 * by this thread's logger), metric updates, sync requests and "committed" go out.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { systemClock } from '../clock.js';
import type { Config } from '../config.js';
import { type AppContext, operatorClientFor } from '../context.js';
import { databaseFaultsFor } from '../db/faults.js';
import { openDatabase } from '../db/open.js';
import { errorMessage } from '../errors.js';
import { createLogger } from '../log.js';
import { createMetrics, type Metrics } from '../metrics.js';
import type { OperatorClient } from '../operator/client.js';
import { registerSecret } from '../redact.js';
import { subscribersFromConfig, useSubscribers } from '../subscribers/subscribers.js';
import { createDispatcherComponent } from './dispatcher.js';
import type { MainMessage, WorkerMessage, WorkerSettings } from './dispatcherMessages.js';

const port = parentPort;
if (!port) throw new Error('dispatcherWorker.ts runs only as a worker thread');
const post = (message: WorkerMessage) => port.postMessage(message);
const settings = workerData as WorkerSettings;
const config: Config = settings.config;
// Before anything can log or store an error: the secrets masked in every text, as in the main thread.
for (const secret of settings.secrets) registerSecret(secret);

/**
 * Metrics whose every update is posted to the main thread, which applies it to the registry that
 * /metrics serves: one registry per daemon, whichever thread counted.
 */
function forwardedMetrics(): Metrics {
  const local = createMetrics();
  const forwarded: Record<string, unknown> = { registry: local.registry };
  for (const [name, metric] of Object.entries(local)) {
    if (name === 'registry') continue;
    forwarded[name] = new Proxy(metric as object, {
      get(target, method: string) {
        const original = Reflect.get(target, method) as unknown;
        if (typeof original !== 'function') return original;
        if (method === 'inc' || method === 'observe' || method === 'set' || method === 'dec')
          return (...args: unknown[]) => post({ type: 'metric', name, method, args });
        return (original as (...a: unknown[]) => unknown).bind(target);
      },
    });
  }
  // The proxies keep each metric's methods and types; only where the update lands changes.
  return forwarded as Metrics;
}

const log = createLogger({
  level: settings.logLevel,
  destination: { write: (line: string) => post({ type: 'log', line }) },
});
const metrics = forwardedMetrics();
const database = openDatabase(config.database.path, {
  migrate: false,
  synchronous: config.database.synchronous,
  // Waiting for the API's commit blocks only this thread: wait as long as the configured timeout.
  busyTimeoutMs: config.database.busy_timeout_ms,
});
// A damaged file takes no writes from either connection (query_only), as the main thread decided.
const faults = databaseFaultsFor(database.sqlite);
if (settings.corruption) faults.markCorrupt(settings.corruption, 'integrity-check');
// State changes committed here write the subscribers' deliveries too, as on the main connection.
useSubscribers(database.sqlite, subscribersFromConfig(config));
let client: OperatorClient | undefined;
const ctx: AppContext = {
  config,
  database,
  log,
  clock: systemClock,
  metrics,
  startedAt: new Date().toISOString(),
  listeners: new Map(),
  operator() {
    client ??= operatorClientFor(config, systemClock, metrics, { log });
    return client;
  },
  operatorRate: () => client?.rate ?? null,
};
const component = createDispatcherComponent(ctx, {
  // The mirror runs on the main thread: a custody sync is asked for there.
  requestSync: async (targets, trigger) => {
    post({ type: 'requestSync', targets: [...targets], trigger });
    return true;
  },
  onCommitted: () => post({ type: 'committed' }),
});

/**
 * The WAL is checkpointed here, off the API's loop (the main connection's automatic checkpoints are
 * off while this thread runs). PASSIVE: never waits for, nor blocks, a writer.
 */
const CHECKPOINT_EVERY_MS = 1_000;
const checkpoints = setInterval(() => {
  if (faults.facts().corruption) return;
  try {
    database.sqlite.pragma('wal_checkpoint(PASSIVE)');
  } catch (err) {
    log.warn({ event: 'database.checkpoint_failed', error: errorMessage(err) }, errorMessage(err));
  }
}, CHECKPOINT_EVERY_MS);

port.on('message', (message: MainMessage) => {
  if (message.type === 'wake') component.wake();
  else if (message.type === 'corrupt') faults.markCorrupt(message.detail, 'integrity-check');
  else if (message.type === 'stop') void stop();
});

let stopping: Promise<void> | undefined;
function stop(): Promise<void> {
  stopping ??= (async () => {
    try {
      clearInterval(checkpoints);
      await component.stop();
    } catch (err) {
      log.error({ event: 'outbox.worker.stop_failed', error: errorMessage(err) }, errorMessage(err));
    }
    database.close();
    post({ type: 'stopped' });
    // Ends this thread only (keep-alive sockets of the operator client would keep it running).
    process.exit(0);
  })();
  return stopping;
}

await component.start();
post({ type: 'started' });
