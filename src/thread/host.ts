/**
 * The main thread's side of a daemon part run in a worker thread (the dispatcher, the mirror): it
 * starts the worker with the settings it needs (workerSide.ts is the other end), writes the worker's
 * log lines to the main logger's destination, applies its metric updates to the registry /metrics
 * serves, tells it of damage found later, starts it again when it dies unexpectedly, and stops it
 * by message. What is particular to each part travels in its own messages (`onMessage`); what is
 * particular to the store, in the {@link HostedStore} its factory built.
 */
import type { Worker } from 'node:worker_threads';
import { pino } from 'pino';
import { errorMessage } from '../common/errors.js';
import { registeredSecrets } from '../common/redact.js';
import type { AppContext } from '../context.js';
import { startWorker } from '../process/startWorker.js';
import type { HostedStore, HostMessage, ThreadMessage, ThreadSettings } from './messages.js';

/** What a hosted worker is and how its own messages are handled. */
export interface ThreadSpec<In, Out> {
  /** The worker module's name next to the caller, without extension ('dispatcherWorker'). */
  module: string;
  /** The caller's `import.meta.url`: the worker module is looked for beside it. */
  from: string;
  /** Prefix of the host's log events ('outbox': `outbox.thread.started`, `outbox.worker.exited`). */
  events: string;
  /** What the logs call it ('dispatcher thread'). */
  label: string;
  /** The store's side of the worker, from the store's factory. */
  store: HostedStore;
  /** Handles the worker's own messages (those not in ThreadMessage). */
  onMessage(message: Out): void;
  /** Called after each metric update of the worker was applied (default: none). */
  onMetric?: (name: string, method: string, args: unknown[]) => void;
  /** Called whenever the worker exits; `stopping` when it was asked to (default: none). */
  onExit?: (stopping: boolean) => void;
  /** Wait before a worker that died unexpectedly is started again, ms (default: 1000). */
  restartDelayMs?: number;
  /** Typing only: the worker's own inbound messages. */
  readonly inbound?: In;
}

/** A hosted worker: started and stopped with its component, `post` sends it a message. */
export interface ThreadHost<In> {
  start(): Promise<void>;
  stop(): Promise<void>;
  /** Sends `message` to the worker; false when none runs now (between a death and its restart). */
  post(message: In | HostMessage): boolean;
}

/** The worker's entry: the compiled .js next to the caller, or the .ts source run through tsx. */
function workerEntry(module: string, from: string): { url: URL; execArgv: string[] } {
  const fromSource = from.endsWith('.ts');
  const url = new URL(`./${module}.${fromSource ? 'ts' : 'js'}`, from);
  // Under tsx the loader is already in execArgv; under vitest it is not, so add it for the sources.
  const loader = new URL('../../node_modules/tsx/dist/loader.mjs', import.meta.url).href;
  const execArgv = fromSource && !process.execArgv.some((a) => a.includes('tsx')) ? ['--import', loader] : [];
  return { url, execArgv: [...process.execArgv, ...execArgv] };
}

/** How often the main connection's fault state is looked at for damage the thread must know of, ms. */
const CORRUPTION_WATCH_MS = 250;

type Writable = { write(line: string): unknown };

/** Where the main logger writes: the worker's lines go to the same place, already formatted. */
function destinationOf(log: AppContext['log']): Writable {
  return (log as unknown as Record<symbol, Writable>)[pino.symbols.streamSym]!;
}

/** Applies a metric update the worker posted to the main registry (unknown names are ignored). */
function applyMetric(ctx: AppContext, name: string, method: string, args: unknown[]): void {
  const metric = (ctx.metrics as unknown as Record<string, Record<string, unknown>>)[name];
  const fn = metric?.[method];
  if (typeof fn === 'function') (fn as (...a: unknown[]) => void).apply(metric, args);
}

/** Hosts the worker `spec` describes for `ctx`'s daemon. */
export function hostThread<In, Out>(ctx: AppContext, spec: ThreadSpec<In, Out>): ThreadHost<In> {
  let worker: Worker | undefined;
  let stopping = false;
  let restartTimer: NodeJS.Timeout | undefined;
  let corruptionWatch: NodeJS.Timeout | undefined;
  const { store } = spec;
  let corruptionTold = false;
  const destination = destinationOf(ctx.log);
  const post = (message: In | HostMessage) => {
    if (!worker) return false;
    worker.postMessage(message);
    return true;
  };

  const spawn = (): Promise<void> =>
    new Promise<void>((resolve, reject) => {
      const { url, execArgv } = workerEntry(spec.module, spec.from);
      const settings: ThreadSettings = {
        config: ctx.config,
        logLevel: ctx.log.level,
        secrets: registeredSecrets(),
        store: store.opening(),
        operatorBudget: ctx.operatorBudget,
      };
      const w = startWorker(url, { workerData: settings, execArgv });
      worker = w;
      let started = false;
      w.on('message', (message: ThreadMessage | Out) => {
        const m = message as ThreadMessage;
        switch (m.type) {
          case 'log':
            destination.write(m.line);
            return;
          case 'metric':
            applyMetric(ctx, m.name, m.method, m.args);
            spec.onMetric?.(m.name, m.method, m.args);
            return;
          case 'started':
            started = true;
            store.workerStarted();
            ctx.log.info(
              {
                event: `${spec.events}.thread.started`,
                threadId: w.threadId,
                ...(m.priority !== undefined ? { priority: m.priority ?? 'unchanged' } : {}),
              },
              `${spec.label} started`,
            );
            resolve();
            return;
          case 'stopped':
            return;
          default:
            spec.onMessage(message as Out);
        }
      });
      w.on('error', (err) => {
        ctx.log.error(
          { event: `${spec.events}.worker.failed`, error: errorMessage(err) },
          `${spec.label} failed: ${errorMessage(err)}`,
        );
        if (!started) reject(err);
      });
      w.on('exit', (code) => {
        if (worker === w) worker = undefined;
        if (started) store.workerEnded();
        // A worker that exits before it started without an 'error' event (process.exit in its
        // module) must still fail the start, or the start would never settle.
        else reject(new Error(`the worker exited (${code}) before it started`));
        spec.onExit?.(stopping);
        if (stopping || !started) return;
        ctx.log.error(
          { event: `${spec.events}.worker.exited`, code },
          `${spec.label} exited (${code}); starting it again`,
        );
        restartTimer = setTimeout(() => {
          restartTimer = undefined;
          if (!stopping) void spawn().catch(() => undefined);
        }, spec.restartDelayMs ?? 1_000);
      });
    });

  return {
    post,
    async start() {
      stopping = false;
      await spawn();
      // A large file's integrity check ends in the background: damage found then reaches the thread.
      corruptionWatch = setInterval(() => {
        const detail = store.damage();
        if (detail === null || corruptionTold) return;
        corruptionTold = true;
        post({ type: 'corrupt', detail });
      }, CORRUPTION_WATCH_MS);
      corruptionWatch.unref();
    },
    async stop() {
      stopping = true;
      clearTimeout(restartTimer);
      clearInterval(corruptionWatch);
      const w = worker;
      if (!w) return;
      // The worker stops its part (which finishes or hands back its work within its own bound),
      // closes its connection and exits; the daemon's stop bound covers the whole wait.
      const exited = new Promise<void>((resolve) => w.once('exit', () => resolve()));
      w.postMessage({ type: 'stop' } satisfies HostMessage);
      await exited;
    },
  };
}
