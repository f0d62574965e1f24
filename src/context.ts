import { type Clock, systemClock } from './clock.js';
import { type Config, requireOperator } from './config.js';
import type { Logger } from './log.js';
import { createMetrics, type Metrics } from './metrics.js';
import type { StateChangeSink } from './operations/effects.js';
import { OperatorClient } from './operator/client.js';
import { budgetRate, newRateBudget } from './operator/rateLimit.js';
import { refuseSqliteUnderPostgres } from './postgres/connection.js';
import { useStateChangeSink } from './sqlite/changes.js';
import { type OpenDatabase, openDatabase } from './sqlite/open.js';

/** The context every loop is built from: what it holds, and how it is made and closed. */

/** The resources a sync can be asked for, as the CLI and the API name them. */
export type SyncTarget = 'projects' | 'issuances' | 'units' | 'custody';
export const SYNC_TARGETS: readonly SyncTarget[] = ['projects', 'issuances', 'units', 'custody'];

/** What started a sync run. */
export type SyncTrigger = 'startup' | 'schedule' | 'manual' | 'api' | 'webhook';

/** What every loop is built from. */
export interface AppContext {
  config: Config;
  database: OpenDatabase;
  log: Logger;
  clock: Clock;
  /** The operator client, created on first use; throws a ConfigError when operator.url is unset. */
  operator(): OperatorClient;
  /** The daemon's adaptive rate and its ceiling (requests/s); null before any of its threads made a client. */
  operatorRate(): { current: number; ceiling: number } | null;
  /**
   * The one request budget to the operator of this daemon (`operator.rate_per_second`, adapted):
   * its worker threads get it in their settings, so the dispatcher's and the syncs' clients share it.
   */
  operatorBudget: SharedArrayBuffer;
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

/** Options of {@link createAppContext}. */
export interface CreateContextOptions {
  /** (default: the system clock) */
  clock?: Clock;
  /** Apply migrations when opening the database (default: true). */
  migrate?: boolean;
  /** How the operator client's rate limit waits; tests pass one that moves their clock (default: setTimeout). */
  sleep?: (ms: number) => Promise<void>;
  /** The metrics to count into (default: a fresh prom-client set; one-shot commands pass {@link noopMetrics}). */
  metrics?: Metrics;
  /**
   * What every state change committed through this database writes besides the feed, in its
   * transaction (operations/effects.ts): the root hands the subscribers' deliveries, so that a
   * cancel from the CLI is pushed as the daemon's would be (default: nothing).
   */
  onStateChange?: StateChangeSink;
}

/** The operator client of `config`, counting into `metrics`; throws a ConfigError when operator.url is unset. */
export function operatorClientFor(
  config: Config,
  clock: Clock,
  metrics: Metrics,
  extra: {
    log?: Logger;
    sleep?: ((ms: number) => Promise<void>) | undefined;
    /** The daemon's shared budget (default: the client's own). */
    budget?: SharedArrayBuffer;
  } = {},
): OperatorClient {
  const { url } = requireOperator(config);
  const { log, sleep, budget } = extra;
  const client = new OperatorClient({
    baseUrl: url,
    apiKey: config.operator.api_key,
    auth: config.operator.auth,
    authOnNotify: config.operator.auth_on_notify,
    timeoutMs: config.operator.timeout_ms,
    connectTimeoutMs: config.operator.connect_timeout_ms,
    ratePerSecond: config.operator.rate_per_second,
    minRatePerSecond: config.operator.min_rate_per_second,
    rateIncreasePerSecond: config.operator.rate_increase_per_second,
    rateBudget: budget,
    onRate: (rate, event) => {
      metrics.operatorRate.set(rate);
      if (event.kind === 'limited')
        log?.warn(
          { event: 'operator.rate.decreased', ratePerSecond: rate, retryAfterMs: event.retryAfterMs },
          'operator answered 429: request rate halved',
        );
      else if (rate === config.operator.rate_per_second)
        log?.info(
          { event: 'operator.rate.recovered', ratePerSecond: rate },
          'request rate back at its ceiling',
        );
    },
    bufferLimitBytes: config.operator.max_body_bytes,
    maxRecordBytes: config.operator.max_record_bytes,
    maxDepth: config.operator.max_depth,
    maxResponseBytes: config.operator.max_response_bytes,
    clock,
    ...(sleep ? { sleep } : {}),
    onResponse: ({ operation, status, durationMs }) => {
      metrics.operatorRequests.inc({ operation, code: String(status) });
      metrics.operatorLatency.observe({ operation }, durationMs / 1000);
    },
  });
  metrics.operatorRate.set(client.rate.current);
  return client;
}

/** Opens the database and builds the shared context; the operator client is made on first use. */
export function createAppContext(
  config: Config,
  log: Logger,
  options: CreateContextOptions = {},
): AppContext {
  refuseSqliteUnderPostgres(config);
  const database = openDatabase(config.database.path, {
    migrate: options.migrate ?? true,
    synchronous: config.database.synchronous,
    busyTimeoutMs: config.database.busy_timeout_ms,
  });
  useStateChangeSink(database.sqlite, options.onStateChange);
  return contextOver(config, log, database, options);
}

/**
 * The context of a command that runs on PostgreSQL (`database.url`): no SQLite file is opened or
 * created, and anything that still reaches for `ctx.database` fails loudly instead of quietly
 * writing to a file at `database.path`. The caller opens (and closes) the PostgreSQL pool.
 */
export function createPgAppContext(
  config: Config,
  log: Logger,
  options: Omit<CreateContextOptions, 'migrate'> = {},
): AppContext {
  const ctx = contextOver(config, log, null, options);
  // Not enumerable, so that spreading the context (`{ ...ctx, store }`) does not reach for it.
  Object.defineProperty(ctx, 'database', {
    enumerable: false,
    get() {
      throw new Error('database.url is set (PostgreSQL): this command has no SQLite database');
    },
  });
  return ctx;
}

function contextOver(
  config: Config,
  log: Logger,
  database: OpenDatabase | null,
  options: CreateContextOptions,
): AppContext {
  const metrics = options.metrics ?? createMetrics();
  const clock = options.clock ?? systemClock;
  let client: OperatorClient | undefined;
  const operatorBudget = newRateBudget();
  const ctx: AppContext = {
    config,
    // Replaced by createPgAppContext's refusal when null.
    database: database as OpenDatabase,
    log,
    clock,
    metrics,
    startedAt: new Date(clock.now()).toISOString(),
    listeners: new Map(),
    operator() {
      if (!client) {
        client = operatorClientFor(config, clock, metrics, {
          log: ctx.log,
          sleep: options.sleep,
          budget: operatorBudget,
        });
      }
      return client;
    },
    // The daemon's one rate, whichever thread's client made the first request.
    operatorRate: () => {
      const current = budgetRate(operatorBudget);
      return current === null ? null : { current, ceiling: config.operator.rate_per_second };
    },
    operatorBudget,
  };
  return ctx;
}

/** Closes what the context opened. */
export function closeAppContext(ctx: AppContext): void {
  ctx.database.close();
}
