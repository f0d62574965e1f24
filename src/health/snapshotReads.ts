import { inByteOrder } from '../common/textForms.js';
import { SHAPE_QUARANTINE_LIKE } from '../mirror/shape/shapeStatements.js';
import { PAUSE_KEY, pauseOf } from '../outbox/pause.js';
import { all, first, type Script, type ScriptStore } from '../store/script.js';
import { raw, type Sql, sql } from '../store/sql.js';
import type { StoreIdentity } from './identity.js';
import { reconciliationFacts } from './reconcileReads.js';
import { schemaFacts } from './schemaReads.js';
import { readSeries } from './series.js';
import {
  type DatabaseFacts,
  type HealthReads,
  type HealthSnapshot,
  learnedPageSize,
  minKnown,
  type ResourceFacts,
  type SnapshotWindow,
  type SubscriberBacklog,
  SYNC_RESOURCES,
} from './snapshot.js';

/**
 * Every statement health is judged on, written once for both stores: the snapshot is one script
 * read in one transaction (see {@link SnapshotEdge}), so every figure is of one moment and both
 * stores feed the same rules the same facts; what only one store knows (a shared store's replicas
 * and the runs they hold) is its edge's script, read in the same moment. Every statement only
 * reads: status never takes a lock a replica could wait on.
 */

/** What a store adds to its health reads: how it reads one moment, and its own facts. */
export interface SnapshotEdge {
  /** Which store this is, and where (the identity's `database`). */
  store: StoreIdentity;
  /** Runs a read-only script in one transaction that sees one moment. */
  atOneMoment<T>(script: Script<T>): Promise<T>;
  /** What this process saw of the database's own health (write failures, locks, corruption). */
  databaseFacts(): DatabaseFacts;
  /** Notes a read error; returns the facts to report, with why. */
  readFailed(err: unknown): DatabaseFacts;
  /** What only this store knows, read in the same moment (a store shared by replicas: its replicas). */
  storeFacts?: () => Script<Pick<HealthSnapshot, 'replicas' | 'runningSyncs'>>;
}

/** The outbox's pause record (outbox/pause.ts), as the snapshot and /readyz read it. */
export const PAUSE_ROW: Sql = sql`SELECT value, updated_at FROM daemon_state WHERE key = ${PAUSE_KEY}`;
export type PauseRow = { value: string; updated_at: string };

/** `k -> n` of rows `{ k, n }`. */
function tally(list: ReadonlyArray<{ k: string; n: number }>): Record<string, number> {
  return Object.fromEntries(list.map((r) => [r.k, r.n]));
}

function* resourceFacts(pageSize: number | undefined): Script<ResourceFacts[]> {
  const out: ResourceFacts[] = [];
  for (const { resource, table } of SYNC_RESOURCES) {
    const last = yield* first<NonNullable<ResourceFacts['lastRun']>>(
      sql`SELECT id, status, started_at AS "startedAt", finished_at AS "finishedAt",
                 error, fetched, inserted, updated, removed, quarantined
            FROM sync_runs WHERE resource = ${resource} ORDER BY id DESC LIMIT 1`,
    );
    const facts = yield* first<{ success: string | null; records: number; state: string | null }>(
      sql`SELECT (SELECT max(finished_at) FROM sync_runs WHERE resource = ${resource} AND status = 'succeeded') AS success,
                 (SELECT count(*) FROM ${raw(`"${table}"`)} WHERE _removed_at IS NULL) AS records,
                 (SELECT state FROM sync_checkpoints WHERE resource = ${resource}) AS state`,
    );
    out.push({
      resource,
      lastSuccessAt: facts?.success ?? null,
      lastRun: last ?? null,
      records: facts?.records ?? 0,
      effectivePageSize: resource === 'custody' ? null : minKnown(pageSize, learnedPageSize(facts?.state)),
    });
  }
  return out;
}

function* outboxFacts(window: SnapshotWindow): Script<HealthSnapshot['outbox']> {
  const byState = tally(
    yield* all(sql`SELECT state AS k, count(*) AS n FROM outbox GROUP BY state ORDER BY state`),
  );
  const cutoff = window.decisionCutoff;
  const times = yield* first<{
    queued: string | null;
    accepted: string | null;
    awaiting: number;
    oldest: string | null;
  }>(
    sql`SELECT (SELECT min(created_at) FROM outbox WHERE state IN ('queued', 'sending')) AS queued,
               (SELECT min(accepted_at) FROM outbox WHERE state = 'accepted') AS accepted,
               (SELECT count(*) FROM outbox WHERE state = 'accepted' AND accepted_at < ${cutoff}) AS awaiting,
               (SELECT min(accepted_at) FROM outbox WHERE state = 'accepted' AND accepted_at < ${cutoff}) AS oldest`,
  );
  const finishedSince = tally(
    yield* all(
      sql`SELECT state AS k, count(*) AS n FROM outbox
           WHERE state IN ('approved', 'rejected', 'failed', 'cancelled') AND finished_at >= ${window.recentSince}
           GROUP BY state`,
    ),
  );
  const recentFailures = yield* all<HealthSnapshot['outbox']['recentFailures'][number]>(
    sql`SELECT "marketplaceTransactionRef" AS ref, "operationType" AS "operationType", last_error AS error, updated_at AS at
          FROM outbox WHERE state = 'failed' ORDER BY updated_at DESC, id DESC LIMIT 10`,
  );
  const pause = pauseOf(yield* first<PauseRow>(PAUSE_ROW));
  return {
    byState,
    oldestQueuedAt: times?.queued ?? null,
    paused: pause && { reason: pause.reason, since: pause.since },
    awaitingDecision: times?.awaiting ?? 0,
    oldestAwaitingAt: times?.oldest ?? null,
    oldestAcceptedAt: times?.accepted ?? null,
    finishedSince,
    recentFailures,
  };
}

function* rejectionFacts(window: SnapshotWindow): Script<HealthSnapshot['rejections']> {
  const since = yield* first<{ n: number }>(
    sql`SELECT count(*) AS n FROM outbox WHERE state = 'rejected' AND decided_at >= ${window.recentSince}`,
  );
  const recent = yield* all<HealthSnapshot['rejections']['recent'][number]>(
    sql`SELECT "marketplaceTransactionRef" AS ref, "operationType" AS "operationType", decision_reason AS reason, decided_at AS at
          FROM outbox WHERE state = 'rejected' ORDER BY decided_at DESC, id DESC LIMIT 10`,
  );
  return { since: since?.n ?? 0, recent };
}

function* webhookFacts(window: SnapshotWindow): Script<HealthSnapshot['webhooks']> {
  const since = window.recentSince;
  const w = yield* first<Omit<HealthSnapshot['webhooks'], 'lastUndecided'>>(
    sql`SELECT
       (SELECT count(*) FROM webhook_events WHERE received_at >= ${since}) AS received,
       (SELECT max(received_at) FROM webhook_events) AS "lastReceivedAt",
       (SELECT count(*) FROM webhook_rejections WHERE at >= ${since}) AS "verificationFailures",
       (SELECT reason FROM webhook_rejections ORDER BY id DESC LIMIT 1) AS "lastFailureReason",
       (SELECT count(*) FROM webhook_events WHERE outcome = 'pending' AND received_at < ${window.decisionCutoff})
         AS "pendingOlderThanCutoff",
       (SELECT count(*) FROM webhook_events WHERE id_reused = ${true} AND received_at >= ${since}) AS "idReused",
       (SELECT count(*) FROM webhook_events WHERE outcome = 'undecided' AND received_at >= ${since}) AS undecided,
       (SELECT count(*) FROM webhook_events WHERE outcome = 'conflict') AS conflicts`,
  );
  if (!w) throw new Error('the webhook figures read no row');
  const lastUndecided =
    w.undecided > 0
      ? yield* first<{ type: string | null; status: string | null }>(
          sql`SELECT event_type AS type, event_status AS status FROM webhook_events
               WHERE outcome = 'undecided' ORDER BY id DESC LIMIT 1`,
        )
      : undefined;
  return { ...w, lastUndecided: lastUndecided ?? null };
}

function* subscriberFacts(): Script<SubscriberBacklog[]> {
  const rows = yield* all<SubscriberBacklog>(
    // Sorted below: SQLite has no "C" collation, and PostgreSQL's default may not be byte order.
    sql`SELECT subscriber,
            count(*) FILTER (WHERE state IN ('pending', 'sending')) AS pending,
            count(*) FILTER (WHERE state = 'dead') AS dead,
            count(*) FILTER (WHERE state = 'delivered') AS delivered,
            min(COALESCE(redriven_at, created_at)) FILTER (WHERE state IN ('pending', 'sending')) AS "oldestPendingAt",
            (SELECT h.last_error FROM deliveries h
              WHERE h.subscriber = d.subscriber AND h.state IN ('pending', 'sending') ORDER BY h.id LIMIT 1) AS "lastError"
       FROM deliveries d GROUP BY subscriber`,
  );
  return rows.sort((a, b) => inByteOrder(a.subscriber, b.subscriber));
}

/** Every fact, read by one script; `edge` gives the store's own facts, read at its end. */
export function* snapshotScript(
  window: SnapshotWindow,
  pageSize: number | undefined,
  edge: Pick<SnapshotEdge, 'databaseFacts' | 'storeFacts'>,
): Script<HealthSnapshot> {
  const resources = yield* resourceFacts(pageSize);
  const outbox = yield* outboxFacts(window);
  const rejections = yield* rejectionFacts(window);
  // Records the shape policy set aside are the schema facts' (re-applied by later runs), not these.
  const quarantine = tally(
    yield* all(
      sql`SELECT resource AS k, count(*) AS n FROM quarantine
           WHERE resolved_at IS NULL AND reason NOT LIKE ${SHAPE_QUARANTINE_LIKE} GROUP BY resource`,
    ),
  );
  const schema = yield* schemaFacts(window.schemaSince);
  const reconciliation = yield* reconciliationFacts();
  const webhooks = yield* webhookFacts(window);
  const subscribers = yield* subscriberFacts();
  const extra = edge.storeFacts ? yield* edge.storeFacts() : {};
  return {
    resources,
    outbox,
    rejections,
    quarantine,
    schema,
    reconciliation,
    webhooks,
    database: edge.databaseFacts(),
    subscribers,
    ...extra,
  };
}

/** The `daemon_state` key of the running daemon's record, where its store keeps one (a file's one daemon). */
export const DAEMON_RECORD_KEY = 'daemon';

/** When the running daemon started, from its record in `daemon_state` (null: none, or unreadable). */
async function daemonStartedAt(store: ScriptStore): Promise<string | null> {
  const [row] = await store.read<{ value: string }>(
    sql`SELECT value FROM daemon_state WHERE key = ${DAEMON_RECORD_KEY}`,
  );
  try {
    return row ? ((JSON.parse(row.value) as { startedAt?: string }).startedAt ?? null) : null;
  } catch {
    return null;
  }
}

/** The health reads of a store: the statements above, read as `edge` says. */
export function healthReads(store: ScriptStore, edge: SnapshotEdge): HealthReads {
  return {
    store: edge.store,
    snapshot: (window, pageSize) => edge.atOneMoment(snapshotScript(window, pageSize, edge)),
    daemonStartedAt: () => daemonStartedAt(store),
    readFailed: (err) => edge.readFailed(err),
    series: (now) => readSeries(store, now),
  };
}
