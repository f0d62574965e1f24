/**
 * The dispatcher as a daemon component that runs it in a worker thread (dispatcherWorker.ts) with
 * its own database connection. Why: profiles of the enqueue benchmark showed the API's answers
 * waiting behind the dispatcher's HTTP work and commits on the one event loop. The API's own writes
 * stay on the main connection's commit queue (a 201 still means the row is on disk); the two
 * connections meet only at SQLite's write lock, held by either for one short commit.
 *
 * The operator rate limit: the worker's operator client has its own limiter at
 * `operator.rate_per_second`, separate from the mirror's in the main thread. Sends and syncs rarely
 * peak together, and the operator's 429s (with Retry-After) slow both down.
 */
import { Worker } from 'node:worker_threads';
import { pino } from 'pino';
import type { AppContext, Component } from '../context.js';
import { databaseFaultsFor } from '../db/faults.js';
import { errorMessage } from '../errors.js';
import { registeredSecrets } from '../redact.js';
import type { RequestSync } from '../syncRequests.js';
import type { MainMessage, WorkerMessage, WorkerSettings } from './dispatcherMessages.js';

/** Options of {@link createDispatcherThreadComponent}. */
export interface DispatcherThreadOptions {
  /** Serves the worker's requests for a custody sync (default: none). */
  requestSync?: RequestSync | undefined;
  /** Called when the worker committed a claim or a settle (default: none). */
  onCommitted?: () => void;
  /** Wait before a worker that died unexpectedly is started again, ms (default: 1000). */
  restartDelayMs?: number;
}

/** The worker's entry: the compiled .js next to this file, or the .ts source run through tsx. */
function workerEntry(): { url: URL; execArgv: string[] } {
  const fromSource = import.meta.url.endsWith('.ts');
  const url = new URL(`./dispatcherWorker.${fromSource ? 'ts' : 'js'}`, import.meta.url);
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

/** This thread checkpoints again as SQLite does by default (every 1000 pages of WAL). */
function restoreCheckpoints(ctx: AppContext): void {
  try {
    if (ctx.database.sqlite.open) ctx.database.sqlite.pragma('wal_autocheckpoint = 1000');
  } catch {
    // A closed or failed connection checkpoints nothing either way.
  }
}

/** The dispatcher component run in a worker thread; `wake` posts the wake-up to it. */
export function createDispatcherThreadComponent(
  ctx: AppContext,
  options: DispatcherThreadOptions = {},
): Component & { wake: () => void } {
  let worker: Worker | undefined;
  let stopping = false;
  let restartTimer: NodeJS.Timeout | undefined;
  let corruptionWatch: NodeJS.Timeout | undefined;
  const faults = databaseFaultsFor(ctx.database.sqlite);
  const corruption = () => faults.facts().corruption?.detail ?? null;
  let corruptionTold = false;
  const destination = destinationOf(ctx.log);
  const send = (message: MainMessage) => worker?.postMessage(message);
  // One wake-up per turn of the loop however many enqueues asked: a postMessage per request was
  // ~4 % of the API thread's time at 500 enqueues/s.
  let wakePosted = false;
  const wake = () => {
    if (wakePosted) return;
    wakePosted = true;
    setImmediate(() => {
      wakePosted = false;
      send({ type: 'wake' });
    });
  };

  const spawn = (): Promise<void> =>
    new Promise<void>((resolve, reject) => {
      const { url, execArgv } = workerEntry();
      const settings: WorkerSettings = {
        config: ctx.config,
        logLevel: ctx.log.level,
        corruption: corruption(),
        secrets: registeredSecrets(),
      };
      const w = new Worker(url, { workerData: settings, execArgv });
      worker = w;
      let started = false;
      w.on('message', (message: WorkerMessage) => {
        switch (message.type) {
          case 'log':
            destination.write(message.line);
            break;
          case 'metric':
            applyMetric(ctx, message.name, message.method, message.args);
            break;
          case 'committed':
            options.onCommitted?.();
            break;
          case 'requestSync':
            void options.requestSync?.(message.targets, message.trigger).catch(() => false);
            break;
          case 'started':
            started = true;
            // The worker checkpoints the WAL from now on: copying pages into the file and its fsync
            // were the longest stalls left on this loop.
            ctx.database.sqlite.pragma('wal_autocheckpoint = 0');
            ctx.log.info(
              { event: 'outbox.thread.started', threadId: w.threadId },
              'dispatcher thread started',
            );
            resolve();
            break;
          case 'stopped':
            break;
        }
      });
      w.on('error', (err) => {
        ctx.log.error(
          { event: 'outbox.worker.failed', error: errorMessage(err) },
          `dispatcher thread failed: ${errorMessage(err)}`,
        );
        if (!started) reject(err);
      });
      w.on('exit', (code) => {
        if (worker === w) worker = undefined;
        restoreCheckpoints(ctx);
        if (stopping || !started) return;
        // Its claims are held by leases with this process's owner name; a new worker's claims
        // take them once the leases run out. Sending resumes at once for every other row.
        ctx.log.error(
          { event: 'outbox.worker.exited', code },
          `dispatcher thread exited (${code}); starting it again`,
        );
        restartTimer = setTimeout(() => {
          restartTimer = undefined;
          if (!stopping) void spawn().catch(() => undefined);
        }, options.restartDelayMs ?? 1_000);
      });
    });

  return {
    name: 'dispatcher',
    wake,
    async start() {
      stopping = false;
      await spawn();
      // A large file's integrity check ends in the background: damage found then reaches the thread.
      corruptionWatch = setInterval(() => {
        const detail = corruption();
        if (detail === null || corruptionTold) return;
        corruptionTold = true;
        send({ type: 'corrupt', detail });
      }, CORRUPTION_WATCH_MS);
      corruptionWatch.unref();
    },
    async stop() {
      stopping = true;
      clearTimeout(restartTimer);
      clearInterval(corruptionWatch);
      const w = worker;
      if (!w) return;
      // The worker stops its dispatcher (in-flight sends finish or are handed back within its
      // grace), closes its connection and exits; the daemon's stop bound covers the whole wait.
      const exited = new Promise<void>((resolve) => w.once('exit', () => resolve()));
      w.postMessage({ type: 'stop' } satisfies MainMessage);
      await exited;
    },
  };
}
