/** The messages between the daemon's main thread and the dispatcher's worker thread. */
import type { Config } from '../config.js';
import type { SyncTarget, SyncTrigger } from '../context.js';

/** What the worker is started with (structured-cloned into it). */
export interface WorkerSettings {
  config: Config;
  /** The main logger's level, so the worker logs exactly what the main thread would. */
  logLevel: string;
  /** What the main thread's integrity check found damaged, if anything: the worker writes nothing then. */
  corruption: string | null;
  /** The secrets the main thread masks: this thread's redaction must know them too. */
  secrets: string[];
}

/** Main thread → worker. */
export type MainMessage =
  | { type: 'wake' }
  | { type: 'stop' }
  /** The main thread found the file damaged (a background check): refuse every write from now on. */
  | { type: 'corrupt'; detail: string };

/** Worker → main thread. */
export type WorkerMessage =
  | { type: 'started' }
  | { type: 'stopped' }
  /** A finished, redacted JSON line for the main logger's destination. */
  | { type: 'log'; line: string }
  | { type: 'metric'; name: string; method: string; args: unknown[] }
  | { type: 'requestSync'; targets: SyncTarget[]; trigger: SyncTrigger }
  /** A claim or settle committed: readers waiting for new outbox changes may look again. */
  | { type: 'committed' };
