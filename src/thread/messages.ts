/**
 * The messages every worker thread of the daemon (dispatcher, mirror) exchanges with the main thread,
 * and what it needs of the store on each side (built by the store's factory, opaque here).
 */
import type { Config } from '../config/config.js';

/** What a worker is started with (structured-cloned into it). */
export interface ThreadSettings {
  config: Config;
  /** The main logger's level, so the worker logs exactly what the main thread would. */
  logLevel: string;
  /** The secrets the main thread masks: this thread's redaction must know them too. */
  secrets: string[];
  /** How the worker opens its store ({@link HostedStore.opening}), opaque to the thread machinery. */
  store: unknown;
  /** The daemon's operator rate budget (AppContext.operatorBudget): one rate for every thread. */
  operatorBudget: SharedArrayBuffer;
}

/** Main thread → worker, for every worker; each worker adds its own. */
export type HostMessage =
  | { type: 'stop' }
  /** The main thread found the file damaged (a background check): refuse every write from now on. */
  | { type: 'corrupt'; detail: string };

/** Worker → main thread, for every worker; each worker adds its own. */
export type ThreadMessage =
  /** `priority`: the thread's kernel id and niceness when it lowered its CPU priority (priority.ts). */
  | { type: 'started'; priority?: { tid: number; nice: number } | null }
  | { type: 'stopped' }
  /** A finished, redacted JSON line for the main logger's destination. */
  | { type: 'log'; line: string }
  | { type: 'metric'; name: string; method: string; args: unknown[] };

/** What a hosted worker needs of the store on the main thread's side, built by the store's factory. */
export interface HostedStore {
  /**
   * How a worker opens the store: cloned into its settings ({@link ThreadSettings.store}), read
   * only by the store's own opener in the worker.
   */
  opening(): unknown;
  /** Damage found since the worker started (a background check), told to it once; null while none. */
  damage(): string | null;
  /** A worker started (SQLite: the main connection leaves its WAL checkpoints to the workers). */
  workerStarted(): void;
  /** A worker ended (SQLite: the main connection checkpoints again once no worker runs). */
  workerEnded(): void;
}

/** The worker's own connection to the store, opened by the opener its root (src/app/) hands workerSide. */
export interface WorkerStore {
  /** Starts the store's own upkeep in this thread (SQLite: its WAL checkpoints). */
  start(): void;
  /** The main thread found the store damaged: refuse every write from now on. */
  markDamaged(detail: string): void;
  /** Ends the upkeep and closes the connection. */
  close(): void;
}
