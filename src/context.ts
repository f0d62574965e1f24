import { type Clock, systemClock } from './common/clock.js';
import type { Logger } from './common/log.js';
import { createMetrics, type Metrics } from './common/metrics.js';
import { type Config, requireOperator } from './config/config.js';
import { OperatorClient } from './operator/client.js';
import { budgetRate, newRateBudget } from './operator/rateLimit.js';

/**
 * The context every loop is built from: services only (configuration, log, clock, metrics, the
 * operator client). It opens no store: the store's factory (src/app/) opens it and hands each part
 * its seams.
 */

/** What every loop is built from. */
export interface AppContext {
  config: Config;
  log: Logger;
  clock: Clock;
  /** The operator client, created on first use; throws a ConfigError when operator.url is unset. */
  operator(): OperatorClient;
  /**
   * The one request budget to the operator of this daemon (`operator.rate_per_second`, adapted):
   * its worker threads get it in their settings, so the dispatcher's and the syncs' clients share it.
   */
  operatorBudget: SharedArrayBuffer;
  metrics: Metrics;
  /** When this process's context was made (ISO): the daemon's start, for uptime. */
  startedAt: string;
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
  /** How the operator client's rate limit waits; tests pass one that moves their clock (default: setTimeout). */
  sleep?: (ms: number) => Promise<void>;
  /** The metrics to count into (default: a fresh prom-client set; one-shot commands pass {@link noopMetrics}). */
  metrics?: Metrics;
  /** The daemon's one operator request budget, which its worker threads share (default: a new one). */
  operatorBudget?: SharedArrayBuffer;
}

/** The operator client of `config`, counting into `metrics`; throws a ConfigError when operator.url is unset. */
function operatorClientFor(
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

/**
 * The shared context; the operator client is made on first use. `extra`: what the caller carries
 * beside it on the same object (a factory's handle, a test's folder).
 */
export function createAppContext<Extra extends object = object>(
  config: Config,
  log: Logger,
  options: CreateContextOptions = {},
  extra?: Extra,
): AppContext & Extra {
  const metrics = options.metrics ?? createMetrics();
  const clock = options.clock ?? systemClock;
  let client: OperatorClient | undefined;
  const operatorBudget = options.operatorBudget ?? newRateBudget();
  const ctx = {
    ...extra,
    config,
    log,
    clock,
    metrics,
    startedAt: new Date(clock.now()).toISOString(),
    operator() {
      // ctx.log, not log: a test may swap the logger after the context was made.
      client ??= operatorClientFor(config, clock, metrics, {
        log: ctx.log,
        sleep: options.sleep,
        budget: operatorBudget,
      });
      return client;
    },
    operatorBudget,
    // Cast: TypeScript types the spread of a generic `extra` as no AppContext & Extra.
  } as AppContext & Extra;
  return ctx;
}

/**
 * The daemon's adaptive operator rate and its ceiling (requests/s), whichever thread's client made
 * the first request; null before any did.
 */
export function operatorRate(
  ctx: Pick<AppContext, 'config' | 'operatorBudget'>,
): { current: number; ceiling: number } | null {
  const current = budgetRate(ctx.operatorBudget);
  return current === null ? null : { current, ceiling: ctx.config.operator.rate_per_second };
}
