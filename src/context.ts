import type { Clock } from './clock.js';
import type { Config } from './config.js';
import type { OpenDatabase } from './db/open.js';
import type { Logger } from './log.js';
import type { Metrics } from './metrics.js';
import type { OperatorClient } from './operator/client.js';

/** The resources a sync can be asked for, as the CLI and the API name them. */
export type SyncTarget = 'projects' | 'issuances' | 'units' | 'custody';
export const SYNC_TARGETS: readonly SyncTarget[] = ['projects', 'issuances', 'units', 'custody'];

/** What started a sync run. */
export type SyncTrigger = 'startup' | 'schedule' | 'manual' | 'api' | 'webhook';

/**
 * Calls between loops that must not import each other (the inbox and the API ask the mirror for a
 * sync), set by the loop that owns them. The dispatcher's wake is wired in daemon.ts instead.
 */
export interface AppHooks {
  /** Starts a sync of the targets in the background; resolves once it is scheduled. */
  requestSync?: (targets: readonly SyncTarget[], trigger: SyncTrigger) => Promise<void>;
}

/** What every loop is built from. */
export interface AppContext {
  config: Config;
  database: OpenDatabase;
  log: Logger;
  clock: Clock;
  /** The operator client, created on first use; throws a ConfigError when operator.url is unset. */
  operator(): OperatorClient;
  hooks: AppHooks;
  metrics: Metrics;
  /** When this process's context was made (ISO): the daemon's start, for uptime. */
  startedAt: string;
  /**
   * The HTTP listeners up now, by component name ('api', 'webhook-listener'), each set by its
   * component on start and removed on stop: what readiness reads.
   */
  listeners: Map<string, string>;
}

/** A part of the daemon with a life: started in order, stopped in reverse. */
export interface Component {
  readonly name: string;
  start(): Promise<void>;
  /** Stops taking new work and finishes (or hands back) what is in flight, within its bound. */
  stop(): Promise<void>;
}
