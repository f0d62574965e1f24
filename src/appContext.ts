import { type Clock, systemClock } from './clock.js';
import { type Config, requireOperator } from './config.js';
import type { AppContext } from './context.js';
import { openDatabase } from './db/open.js';
import { refuseUntilPostgresStore } from './db/pgConfig.js';
import type { Logger } from './log.js';
import { createMetrics } from './metrics.js';
import { OperatorClient } from './operator/client.js';

/** Options of {@link createAppContext}. */
export interface CreateContextOptions {
  /** (default: the system clock) */
  clock?: Clock;
  /** Apply migrations when opening the database (default: true). */
  migrate?: boolean;
}

/** Opens the database and builds the shared context; the operator client is made on first use. */
export function createAppContext(
  config: Config,
  log: Logger,
  options: CreateContextOptions = {},
): AppContext {
  refuseUntilPostgresStore(config);
  const database = openDatabase(config.database.path, {
    migrate: options.migrate ?? true,
    synchronous: config.database.synchronous,
    busyTimeoutMs: config.database.busy_timeout_ms,
  });
  const metrics = createMetrics();
  const clock = options.clock ?? systemClock;
  let client: OperatorClient | undefined;
  return {
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
          bufferLimitBytes: config.operator.max_body_bytes,
          maxRecordBytes: config.operator.max_record_bytes,
          maxDepth: config.operator.max_depth,
          maxResponseBytes: config.operator.max_response_bytes,
          clock,
          onResponse: ({ operation, status, durationMs }) => {
            metrics.operatorRequests.inc({ operation, code: String(status) });
            metrics.operatorLatency.observe({ operation }, durationMs / 1000);
          },
        });
      }
      return client;
    },
  };
}

/** Closes what the context opened. */
export function closeAppContext(ctx: AppContext): void {
  ctx.database.close();
}
