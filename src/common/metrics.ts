import { createRequire } from 'node:module';
import type * as PromClient from 'prom-client';

/**
 * prom-client is loaded when metrics are made, not when this module is imported: a one-shot
 * command (`vcu-sync sync`) serves no /metrics and uses {@link noopMetrics}, so it never loads
 * prom-client (~20 MB of the peak RSS of `vcu-sync sync units`, `npm run bench -- --only rss`).
 */
const require = createRequire(import.meta.url);

/**
 * Every Prometheus metric vcu-sync exports, defined in one place. One set per daemon (not the
 * global registry), so tests can run several daemons in one process.
 * Gauges that describe the database (outbox depth, last success) are filled at scrape time by the
 * API from the same health module `vcu-sync status` uses.
 */
export function createMetrics() {
  const { Counter, Gauge, Histogram, Registry } = require('prom-client') as typeof PromClient;
  const registry = new Registry();
  // Every metric in this daemon's registry, none in prom-client's global one.
  const registers = [registry];
  const counter = <L extends string>(c: PromClient.CounterConfiguration<L>) =>
    new Counter({ ...c, registers });
  const gauge = <L extends string>(c: PromClient.GaugeConfiguration<L>) => new Gauge({ ...c, registers });
  const histogram = <L extends string>(c: PromClient.HistogramConfiguration<L>) =>
    new Histogram({ ...c, registers });
  const metrics = {
    registry,
    syncRuns: counter({
      name: 'vcu_sync_sync_runs_total',
      help: 'Sync runs by resource and final status.',
      labelNames: ['resource', 'status'] as const,
    }),
    syncDuration: histogram({
      name: 'vcu_sync_sync_duration_seconds',
      help: 'Duration of sync runs.',
      labelNames: ['resource'] as const,
      buckets: [0.1, 0.5, 1, 5, 15, 60, 300, 900, 3600],
    }),
    syncRecords: counter({
      name: 'vcu_sync_sync_records_total',
      help: 'Records processed by sync runs, by resource and outcome (inserted, updated, unchanged, removed, quarantined).',
      labelNames: ['resource', 'outcome'] as const,
    }),
    notifyRequests: counter({
      name: 'vcu_sync_notify_requests_total',
      help: 'POST /notify attempts by HTTP status code ("error" when there was no answer).',
      labelNames: ['code'] as const,
    }),
    webhookEvents: counter({
      name: 'vcu_sync_webhook_events_total',
      help: 'Webhook requests by outcome (applied, pending, duplicate, conflict, ignored, undecided, replay, rejected_signature, ...).',
      labelNames: ['outcome'] as const,
    }),
    webhookIdReused: counter({
      name: 'vcu_sync_webhook_id_reused_total',
      help: 'Webhooks whose id was seen before with another body (stored and acted on as new events).',
    }),
    rejections: counter({
      name: 'vcu_sync_operations_rejected_total',
      help: 'Operations the operator rejected.',
    }),
    operatorLatency: histogram({
      name: 'vcu_sync_operator_request_duration_seconds',
      help: 'Latency of requests to the operator, by operation.',
      labelNames: ['operation'] as const,
      buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    }),
    operatorRequests: counter({
      name: 'vcu_sync_operator_requests_total',
      help: 'Requests to the operator by operation and HTTP status code ("error" when there was no answer).',
      labelNames: ['operation', 'code'] as const,
    }),
    operatorRate: gauge({
      name: 'vcu_sync_operator_rate_per_second',
      help: 'The adaptive request rate to the operator now: operator.rate_per_second until a 429 halves it, climbing back while requests succeed.',
    }),
    databaseWait: histogram({
      name: 'vcu_sync_database_wait_seconds',
      help: 'How long a group commit waited, by connection (main: the API and webhooks; dispatcher) and phase (lock: for the write lock another connection held; fsync: for the WAL to reach the disk before its callers were answered).',
      labelNames: ['connection', 'phase'] as const,
      buckets: [0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    }),
    /** Set by the API at scrape time from the health module. */
    outboxDepth: gauge({
      name: 'vcu_sync_outbox_rows',
      help: 'Outbox rows by state.',
      labelNames: ['state'] as const,
    }),
    outboxOldestQueuedAge: gauge({
      name: 'vcu_sync_outbox_oldest_queued_age_seconds',
      help: 'Age of the oldest queued outbox row (0 when none).',
    }),
    lastSyncSuccess: gauge({
      name: 'vcu_sync_last_success_timestamp_seconds',
      help: 'Unix time of the last successful sync, by resource.',
      labelNames: ['resource'] as const,
    }),
    buildInfo: gauge({
      name: 'vcu_sync_build_info',
      help: 'Always 1; labels say which vcu-sync this is: version, instance, operator host, database kind and location, Node version.',
      labelNames: ['version', 'instance', 'operator_host', 'database_kind', 'database', 'node'] as const,
    }),
    startTime: gauge({
      name: 'vcu_sync_start_time_seconds',
      help: 'Unix time the daemon started (uptime = time() - this).',
    }),
    status: gauge({
      name: 'vcu_sync_status',
      help: 'Overall health as vcu-sync status judges it: 0 ok, 1 warning, 2 critical.',
    }),
    problem: gauge({
      name: 'vcu_sync_problem',
      help: '1 for each status problem present now, by code and severity (the alert rules fire on these).',
      labelNames: ['code', 'severity'] as const,
    }),
    decisionsAwaiting: gauge({
      name: 'vcu_sync_decisions_awaiting',
      help: 'Operations accepted by the operator and waiting for its decision.',
    }),
    decisionOldestAge: gauge({
      name: 'vcu_sync_decision_oldest_age_seconds',
      help: 'Age of the oldest accepted operation still waiting for a decision (0 when none).',
    }),
    effectivePageSize: gauge({
      name: 'vcu_sync_effective_page_size',
      help: 'The limit each public list is paged with: sync.page_size, or the operator cap learned below it.',
      labelNames: ['resource'] as const,
    }),
    mirrorRecords: gauge({
      name: 'vcu_sync_mirror_records',
      help: 'Records in the mirror (not removed), by resource.',
      labelNames: ['resource'] as const,
    }),
    /** Set by the API at scrape time from the health module (issue 28). */
    schemaChanges: gauge({
      name: 'vcu_sync_schema_changes',
      help: "Changes to the operator's records' shape recorded in schema_changes, by mirror table and kind (field-added, field-removed, type-changed, new-value, key-format-changed); each change counts once, however many records show it.",
      labelNames: ['resource', 'kind'] as const,
    }),
    schemaQuarantined: gauge({
      name: 'vcu_sync_schema_quarantined',
      help: 'Records quarantined for their shape (sync.schema policies), still open and so missing from the mirror, by mirror table.',
      labelNames: ['resource'] as const,
    }),
    /** Set by the API at scrape time from the health module (issue 29). */
    reconciliationFindings: gauge({
      name: 'vcu_sync_reconciliation_findings',
      help: "Open reconciliation findings (the marketplace's reported operations against the registry's data), by kind and its severity (critical, warning, info); 0 for every kind with none open.",
      labelNames: ['kind', 'severity'] as const,
    }),
    subscriberDeliveries: counter({
      name: 'vcu_sync_subscriber_deliveries_total',
      help: 'Subscriber delivery attempts by subscriber and outcome (delivered, retry, dead).',
      labelNames: ['subscriber', 'outcome'] as const,
    }),
    /** Set by a PostgreSQL replica when its database goes away and comes back (app/postgresStores.ts). */
    databaseUp: gauge({
      name: 'vcu_sync_database_up',
      help: 'Whether the database could be reached at the last connection attempt (1) or not (0); always 1 on SQLite.',
    }),
    /** Set by the API at scrape time from the health module. */
    subscriberBacklog: gauge({
      name: 'vcu_sync_subscriber_deliveries',
      help: 'Subscriber deliveries by subscriber and state (pending includes sending; dead is the dead letter).',
      labelNames: ['subscriber', 'state'] as const,
    }),
  };
  // Up until a PostgreSQL replica's tracker says otherwise; a SQLite file is never "unreachable".
  metrics.databaseUp.set(1);
  return metrics;
}

export type Metrics = ReturnType<typeof createMetrics>;

/** Does nothing whatever is called on it, at any depth (registry.metrics() resolves to ''). */
const NOOP: unknown = new Proxy(() => undefined, {
  get: (_target, prop) => (prop === 'metrics' ? async () => '' : prop === 'then' ? undefined : NOOP),
  apply: () => undefined,
});

/**
 * Metrics that record nothing, for one-shot commands that serve no /metrics: the code that counts
 * stays the same, and prom-client is never loaded.
 */
export function noopMetrics(): Metrics {
  // The proxy answers every member of every instrument; its type is the real one's by construction.
  return NOOP as Metrics;
}
