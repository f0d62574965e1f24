/**
 * The worker's side of a daemon part run in its own thread (host.ts is the other end): a context
 * like the main thread's, over its own database connection, whose log lines (already redacted here)
 * and metric updates go to the main thread by message. It checkpoints the WAL from here, off the
 * API's loop, and ends the thread when asked to stop.
 */

import { parentPort, workerData } from 'node:worker_threads';
import { systemClock } from '../clock.js';
import type { Config } from '../config.js';
import { type AppContext, type Component, operatorClientFor } from '../context.js';
import { errorMessage } from '../errors.js';
import { createLogger } from '../log.js';
import { createMetrics, type Metrics } from '../metrics.js';
import type { StateChangeSink } from '../operations/effects.js';
import type { OperatorClient } from '../operator/client.js';
import { registerSecret } from '../redact.js';
import { useStateChangeSink } from '../sqlite/changes.js';
import { databaseFaultsFor } from '../sqlite/faults.js';
import { openDatabase } from '../sqlite/open.js';
import { boundWal } from '../sqlite/walBound.js';
import { purgeWalIfOwed } from '../sqlite/walPurge.js';
import { useWriterGate } from '../sqlite/writerGate.js';
import type { HostMessage, ThreadMessage, ThreadSettings } from './messages.js';
import { lowerThreadPriority } from './priority.js';

/**
 * Metrics whose every update is posted to the main thread, which applies it to the registry that
 * /metrics serves: one registry per daemon, whichever thread counted.
 */
function forwardedMetrics(post: (message: ThreadMessage) => void): Metrics {
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

/**
 * The WAL is checkpointed in the workers, off the API's loop (the main connection's automatic
 * checkpoints are off while one runs), and kept within its bound (sqlite/walBound.ts): often, so that
 * a burst of writes (5,000 webhooks a second write ~60 MiB of WAL) is copied back in small steps.
 */
const CHECKPOINT_EVERY_MS = 100;

/** Options of {@link WorkerSide.run}. */
export interface RunOptions {
  /** Lower this thread's CPU priority to this niceness, for bulk work (default: keep it). */
  nice?: number;
}

/** A worker's context and its link to the main thread. */
export interface WorkerSide<Out> {
  ctx: AppContext;
  post(message: Out | ThreadMessage): void;
  /**
   * Starts `component` in this thread: its own messages go to `onMessage`; stop and damage are
   * handled here. Resolves once it started (the main thread hears 'started').
   */
  run<In>(component: Component, onMessage: (message: In) => void, options?: RunOptions): Promise<void>;
}

/** Options of {@link workerSide}. */
export interface WorkerSideOptions {
  /**
   * This thread's `synchronous`, when its commits need not reach the disk one by one (default:
   * `database.synchronous`). Under NORMAL a commit writes the WAL without syncing it; the WAL is
   * synced by the next checkpoint (this thread makes one every {@link CHECKPOINT_EVERY_MS}) or the
   * main connection's next durable commit, whichever comes first.
   */
  synchronous?: 'full' | 'normal';
  /**
   * What every state change committed on this thread's connection writes besides the feed
   * (operations/effects.ts), from the thread's config: the thread's root (app/) hands the
   * subscribers' deliveries, as the main thread's does (default: nothing; a thread that changes no
   * operation needs none).
   */
  stateChangeSink?: (config: Config) => StateChangeSink | undefined;
}

/** Builds this worker's context from the settings the main thread started it with. */
export function workerSide<Out>(name: string, options: WorkerSideOptions = {}): WorkerSide<Out> {
  const port = parentPort;
  if (!port) throw new Error(`${name} runs only as a worker thread`);
  const post = (message: Out | ThreadMessage) => port.postMessage(message);
  const settings = workerData as ThreadSettings;
  const config = settings.config;
  // Before anything can log or store an error: the secrets masked in every text, as in the main thread.
  for (const secret of settings.secrets) registerSecret(secret);
  useWriterGate(settings.writerGate);

  const log = createLogger({
    level: settings.logLevel,
    destination: { write: (line: string) => post({ type: 'log', line }) },
  });
  const metrics = forwardedMetrics(post);
  const database = openDatabase(config.database.path, {
    migrate: false,
    synchronous: options.synchronous ?? config.database.synchronous,
    // Waiting for the API's commit blocks only this thread: wait as long as the configured timeout.
    busyTimeoutMs: config.database.busy_timeout_ms,
  });
  // A damaged file takes no writes from either connection (query_only), as the main thread decided.
  const faults = databaseFaultsFor(database.sqlite);
  if (settings.corruption) faults.markCorrupt(settings.corruption, 'integrity-check');
  // State changes committed here write what they write on the main connection.
  useStateChangeSink(database.sqlite, options.stateChangeSink?.(config));
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
      // The daemon's one budget: this thread's requests count against the same rate as the others'.
      client ??= operatorClientFor(config, systemClock, metrics, { log, budget: settings.operatorBudget });
      return client;
    },
    operatorRate: () => client?.rate ?? null,
    operatorBudget: settings.operatorBudget,
  };

  return {
    ctx,
    post,
    async run<In>(component: Component, onMessage: (message: In) => void, options: RunOptions = {}) {
      const priority = options.nice === undefined ? undefined : lowerThreadPriority(options.nice);
      const checkpoints = setInterval(() => {
        if (faults.facts().corruption) return;
        try {
          purgeWalIfOwed(database.sqlite);
          const { frames, full } = boundWal(database.sqlite, config.database.wal_bound_mib);
          if (full) log.debug({ event: 'database.wal.bounded', frames }, 'WAL checkpointed in full');
        } catch (err) {
          log.warn({ event: 'database.checkpoint_failed', error: errorMessage(err) }, errorMessage(err));
        }
      }, CHECKPOINT_EVERY_MS);
      let stopping = false;
      const stop = async () => {
        if (stopping) return;
        stopping = true;
        try {
          clearInterval(checkpoints);
          await component.stop();
        } catch (err) {
          log.error({ event: `${name}.stop_failed`, error: errorMessage(err) }, errorMessage(err));
        }
        database.close();
        post({ type: 'stopped' });
        // Ends this thread only (keep-alive sockets of the operator client would keep it running).
        process.exit(0);
      };
      port.on('message', (message: HostMessage | In) => {
        const m = message as HostMessage;
        if (m.type === 'corrupt') faults.markCorrupt(m.detail, 'integrity-check');
        else if (m.type === 'stop') void stop();
        else onMessage(message as In);
      });
      await component.start();
      post({ type: 'started', ...(priority === undefined ? {} : { priority }) });
    },
  };
}
