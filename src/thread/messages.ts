/** The messages every worker thread of the daemon (dispatcher, mirror) exchanges with the main thread. */
import type { Config } from '../config.js';

/** What a worker is started with (structured-cloned into it). */
export interface ThreadSettings {
  config: Config;
  /** The main logger's level, so the worker logs exactly what the main thread would. */
  logLevel: string;
  /** What the main thread's integrity check found damaged, if anything: the worker writes nothing then. */
  corruption: string | null;
  /** The secrets the main thread masks: this thread's redaction must know them too. */
  secrets: string[];
  /** The process's writer gate (sqlite/writerGate.ts), shared so bulk writes give way to the API's. */
  writerGate: SharedArrayBuffer;
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
