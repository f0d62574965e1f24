import { type Clock, systemClock } from './clock.js';
import { type Config, requireOperator } from './config.js';
import type { AppContext } from './context.js';
import { openDatabase } from './db/open.js';
import type { Logger } from './log.js';
import { createMetrics } from './metrics.js';
import { OperatorClient } from './operator/client.js';

/** Options of {@link createAppContext}. */
export interface CreateContextOptions {
  /** (default: the system clock) */
  clock?: Clock;
  /** Apply migrations when opening the database (default: true). */
  migrate?: boolean;
  /** How the operator client's rate limit waits; tests pass one that moves their clock (default: setTimeout). */
  sleep?: (ms: number) => Promise<void>;
}

/** Opens the database and builds the shared context; the operator client is made on first use. */
export function createAppContext(
  config: Config,
  log: Logger,
  options: CreateContextOptions = {},
): AppContext {
  const database = openDatabase(config.database.path, {
    migrate: options.migrate ?? true,
    synchronous: config.database.synchronous,
    busyTimeoutMs: config.database.busy_timeout_ms,
  });
  const metrics = createMetrics();
  const clock = options.clock ?? systemClock;
  let client: OperatorClient | undefined;
  const ctx: AppContext = {
    config,
    database,
    log,
    clock,
    metrics,
    hooks: {},
    startedAt: new Date(clock.now()).toISOString(),
    listeners: new Map(),
    operator() {
      if (!client) {
        const { url } = requireOperator(config);
        client = new OperatorClient({
          baseUrl: url,
          apiKey: config.operator.api_key,
          auth: config.operator.auth,
          authOnNotify: config.operator.auth_on_notify,
          timeoutMs: config.operator.timeout_ms,
          connectTimeoutMs: config.operator.connect_timeout_ms,
          ratePerSecond: config.operator.rate_per_second,
          minRatePerSecond: config.operator.min_rate_per_second,
          rateIncreasePerSecond: config.operator.rate_increase_per_second,
          onRate: (rate, event) => {
            metrics.operatorRate.set(rate);
            if (event.kind === 'limited')
              ctx.log.warn(
                { event: 'operator.rate.decreased', ratePerSecond: rate, retryAfterMs: event.retryAfterMs },
                'operator answered 429: request rate halved',
              );
            else if (rate === config.operator.rate_per_second)
              ctx.log.info(
                { event: 'operator.rate.recovered', ratePerSecond: rate },
                'request rate back at its ceiling',
              );
          },
          bufferLimitBytes: config.operator.max_body_bytes,
          clock,
          ...(options.sleep ? { sleep: options.sleep } : {}),
          onResponse: ({ operation, status, durationMs }) => {
            metrics.operatorRequests.inc({ operation, code: String(status) });
            metrics.operatorLatency.observe({ operation }, durationMs / 1000);
          },
        });
        metrics.operatorRate.set(client.rate.current);
      }
      return client;
    },
    operatorRate: () => client?.rate ?? null,
  };
  return ctx;
}

/** Closes what the context opened. */
export function closeAppContext(ctx: AppContext): void {
  ctx.database.close();
}
