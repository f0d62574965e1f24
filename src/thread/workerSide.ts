/**
 * The worker's side of a daemon part run in its own thread (host.ts is the other end): a context
 * like the main thread's, over its own connection to the store (opened by the store's opener, which
 * the worker's root hands in), whose log lines (already redacted here) and metric updates go to the
 * main thread by message. It ends the thread when asked to stop.
 */

import { parentPort, workerData } from 'node:worker_threads';
import { errorMessage } from '../common/errors.js';
import { createLogger, type Logger } from '../common/log.js';
import { createMetrics, type Metrics } from '../common/metrics.js';
import { registerSecret } from '../common/redact.js';
import type { Config } from '../config/config.js';
import { type AppContext, type Component, createAppContext } from '../context.js';
import type { HostMessage, ThreadMessage, ThreadSettings, WorkerStore } from './messages.js';
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

/** Options of {@link WorkerSide.run}. */
export interface RunOptions {
  /** Lower this thread's CPU priority to this niceness, for bulk work (default: keep it). */
  nice?: number;
}

/** A worker's context, its store and its link to the main thread. */
export interface WorkerSide<Out, S extends WorkerStore> {
  ctx: AppContext;
  store: S;
  post(message: Out | ThreadMessage): void;
  /**
   * Starts `component` in this thread: its own messages go to `onMessage`; stop and damage are
   * handled here. Resolves once it started (the main thread hears 'started').
   */
  run<In>(component: Component, onMessage: (message: In) => void, options?: RunOptions): Promise<void>;
}

/** Opens this worker's store from what the main thread sent ({@link ThreadSettings.store}). */
export type OpenWorkerStore<S extends WorkerStore> = (opening: unknown, config: Config, log: Logger) => S;

/** Builds this worker's context and opens its store from the settings the main thread started it with. */
export function workerSide<Out, S extends WorkerStore>(
  name: string,
  openStore: OpenWorkerStore<S>,
): WorkerSide<Out, S> {
  const port = parentPort;
  if (!port) throw new Error(`${name} runs only as a worker thread`);
  const post = (message: Out | ThreadMessage) => port.postMessage(message);
  const settings = workerData as ThreadSettings;
  const config = settings.config;
  // Before anything can log or store an error: the secrets masked in every text, as in the main thread.
  for (const secret of settings.secrets) registerSecret(secret);
  const log = createLogger({
    level: settings.logLevel,
    destination: { write: (line: string) => post({ type: 'log', line }) },
  });
  const store = openStore(settings.store, config, log);
  // The daemon's one budget: this thread's requests count against the same rate as the others'.
  const ctx = createAppContext(config, log, {
    metrics: forwardedMetrics(post),
    operatorBudget: settings.operatorBudget,
  });

  return {
    ctx,
    store,
    post,
    async run<In>(component: Component, onMessage: (message: In) => void, options: RunOptions = {}) {
      const priority = options.nice === undefined ? undefined : lowerThreadPriority(options.nice);
      store.start();
      let stopping = false;
      const stop = async () => {
        if (stopping) return;
        stopping = true;
        try {
          await component.stop();
        } catch (err) {
          log.error({ event: `${name}.stop_failed`, error: errorMessage(err) }, errorMessage(err));
        }
        store.close();
        post({ type: 'stopped' });
        // Ends this thread only (keep-alive sockets of the operator client would keep it running).
        process.exit(0);
      };
      port.on('message', (message: HostMessage | In) => {
        const m = message as HostMessage;
        if (m.type === 'corrupt') store.markDamaged(m.detail);
        else if (m.type === 'stop') void stop();
        else onMessage(message as In);
      });
      await component.start();
      post({ type: 'started', ...(priority === undefined ? {} : { priority }) });
    },
  };
}
