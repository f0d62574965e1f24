import { type DatabaseFacts, databaseFaultsFor, NO_FAULTS } from '../db/faults.js';
import type { Sqlite } from '../db/open.js';
import { decisionConflicts } from '../inbox/eventStore.js';
import { awaitingDecision } from '../operations/reads.js';
import { readPause } from '../outbox/pause.js';
import { runSqlite } from '../store/sqliteScripts.js';
import { type SubscriberBacklog, subscriberBacklogs } from '../subscribers/reads.js';
import type { Series } from './series.js';

/**
 * Every fact health is judged on, read from the database in one short read transaction, so the
 * daemon, `vcu-sync status` in another process, and the metrics all judge the same numbers.
 * All SQL of the health module lives here.
 */

/** The latest runs of one sync resource. */
export interface ResourceFacts {
  resource: string;
  lastSuccessAt: string | null;
  lastRun: {
    id: number;
    status: string;
    startedAt: string;
    finishedAt: string | null;
    error: string | null;
    fetched: number;
    inserted: number;
    updated: number;
    removed: number;
    quarantined: number;
  } | null;
  /** Records in the mirror table, not removed. */
  records: number;
  /**
   * Public lists: the `limit` their scans ask for, below `sync.page_size` when the operator was
   * found to cap it (learned, kept in the checkpoint); null for custody.
   */
  effectivePageSize: number | null;
}

export interface HealthSnapshot {
  resources: ResourceFacts[];
  outbox: {
    byState: Record<string, number>;
    oldestQueuedAt: string | null;
    paused: { reason: string; since: string } | null;
    /** Accepted rows with no decision, accepted before the cutoff. */
    awaitingDecision: number;
    oldestAwaitingAt: string | null;
    /** When the oldest accepted row still waiting for a decision was accepted (any age). */
    oldestAcceptedAt: string | null;
    /** Decided or ended in the recent window, by final state (approved, rejected, failed, cancelled). */
    finishedSince: Record<string, number>;
    recentFailures: Array<{ ref: string; operationType: string; error: string | null; at: string }>;
  };
  rejections: {
    since: number;
    recent: Array<{ ref: string; operationType: string; reason: string | null; at: string }>;
  };
  quarantine: Record<string, number>;
  webhooks: {
    received: number;
    verificationFailures: number;
    lastFailureReason: string | null;
    conflicts: number;
    pendingOlderThanCutoff: number;
    lastReceivedAt: string | null;
    /** Events in the recent window whose webhook id had been seen with another body. */
    idReused: number;
    /** Events in the recent window whose decision could not be read, and the latest one's words. */
    undecided: number;
    lastUndecided: { type: string | null; status: string | null } | null;
  };
  /** What this process saw of the database's own health (write failures, locks, corruption). */
  database: DatabaseFacts;
  /** Deliveries to `[[subscribers]]`, per subscriber (absent when unread). */
  subscribers?: SubscriberBacklog[];
  /**
   * PostgreSQL only (absent on SQLite, where one process runs): every replica registered in
   * `replicas`, by lease owner, with whether it is alive and what it holds.
   */
  replicas?: ReplicaFacts[];
  /**
   * PostgreSQL only: sync runs still `running`, and whether their resource's run lock is held (a
   * free lock means the replica running it is gone; the next run marks it `interrupted`).
   */
  runningSyncs?: RunningSync[];
}

/** One replica as its `replicas` row and its liveness lock show it. */
export interface ReplicaFacts {
  /** Its lease owner (unique per process). */
  owner: string;
  /** The instance name it runs as. */
  name: string;
  /** What it runs, comma-separated (e.g. `outbox,mirror`). */
  runs: string;
  startedAt: string;
  lastHeartbeatAt: string;
  /** Its liveness lock is held, so its session is up. */
  alive: boolean;
  /** Outbox rows it has claimed (`sending` under its lease), and the oldest claim's update. */
  claimed: number;
  /** Subscriber deliveries it has claimed (`sending` under its lease). */
  claimedDeliveries: number;
  oldestClaimAt: string | null;
}

/** A sync run still marked `running`. */
export interface RunningSync {
  id: number;
  resource: string;
  startedAt: string;
  /** The process that started it. */
  pid: number | null;
  /** Its resource's run lock is held (by whichever replica runs it). */
  lockHeld: boolean;
}

/**
 * Where the snapshot is read: one call is one snapshot, read in one transaction (SQLite's
 * synchronously, PostgreSQL's in one REPEATABLE READ transaction), so both stores feed the same
 * rules the same facts.
 */
export interface HealthReads {
  /** The snapshot; throws when the database cannot be read (status turns that into a problem). */
  snapshot(window: SnapshotWindow, pageSize?: number): Promise<HealthSnapshot>;
  /** When the running daemon started, from its record in `daemon_state` (null: none). */
  daemonStartedAt(): Promise<string | null>;
  /** Notes a read error (SQLite records corruption); returns the facts to report, with why. */
  readFailed(err: unknown): DatabaseFacts;
  /** The status page's charts as of `now`; throws when the database cannot be read. */
  series(now: number): Promise<Series>;
}

/** The snapshot when the database cannot be read: no figures, only why. */
export function unreadableSnapshot(database: DatabaseFacts): HealthSnapshot {
  return {
    resources: [],
    outbox: {
      byState: {},
      oldestQueuedAt: null,
      paused: null,
      awaitingDecision: 0,
      oldestAwaitingAt: null,
      oldestAcceptedAt: null,
      finishedSince: {},
      recentFailures: [],
    },
    rejections: { since: 0, recent: [] },
    quarantine: {},
    webhooks: {
      received: 0,
      verificationFailures: 0,
      lastFailureReason: null,
      conflicts: 0,
      pendingOlderThanCutoff: 0,
      lastReceivedAt: null,
      idReused: 0,
      undecided: 0,
      lastUndecided: null,
    },
    database: { ...NO_FAULTS, ...database },
  };
}

/** Times the snapshot counts from (ISO strings). */
export interface SnapshotWindow {
  /** Start of the "recent" window (rejections, failures, webhook counts): usually 24 hours ago. */
  recentSince: string;
  /** Accepted before this and still undecided is "awaiting too long". */
  decisionCutoff: string;
}

/** Mirror tables by the name health reports them under. */
export const SYNC_RESOURCES: ReadonlyArray<{ resource: string; table: string }> = [
  { resource: 'projects', table: 'projects' },
  { resource: 'issuances', table: 'issuances' },
  { resource: 'units', table: 'unit_operations' },
  { resource: 'custody', table: 'custody_projects' },
];

/**
 * Reads the facts. `pageSize` is the configured `sync.page_size` (default: unknown, so
 * `effectivePageSize` is only the learned cap, or null).
 */
export function readSnapshot(sqlite: Sqlite, window: SnapshotWindow, pageSize?: number): HealthSnapshot {
  const read = sqlite.transaction((): HealthSnapshot => {
    const resources = SYNC_RESOURCES.map(({ resource, table }): ResourceFacts => {
      const last = sqlite
        .prepare(
          `SELECT id, status, started_at AS startedAt, finished_at AS finishedAt, error, fetched, inserted, updated, removed, quarantined
           FROM sync_runs WHERE resource = ? ORDER BY id DESC LIMIT 1`,
        )
        .get(resource) as ResourceFacts['lastRun'] | undefined;
      const success = sqlite
        .prepare(`SELECT max(finished_at) FROM sync_runs WHERE resource = ? AND status = 'succeeded'`)
        .pluck()
        .get(resource) as string | null;
      const records = sqlite
        .prepare(`SELECT count(*) FROM "${table}" WHERE _removed_at IS NULL`)
        .pluck()
        .get() as number;
      const learned = sqlite
        // An unreadable state counts as none learned, as the sync itself reads it.
        .prepare(
          `SELECT CASE WHEN json_valid(state) THEN json_extract(state, '$.pageSize') END
           FROM sync_checkpoints WHERE resource = ?`,
        )
        .pluck()
        .get(resource) as number | null | undefined;
      const effectivePageSize =
        resource === 'custody' ? null : minKnown(pageSize, typeof learned === 'number' ? learned : undefined);
      return { resource, lastSuccessAt: success, lastRun: last ?? null, records, effectivePageSize };
    });

    const byState: Record<string, number> = {};
    for (const row of sqlite
      .prepare('SELECT state, count(*) AS n FROM outbox GROUP BY state')
      .all() as Array<{
      state: string;
      n: number;
    }>) {
      byState[row.state] = row.n;
    }
    const oldestQueuedAt = sqlite
      .prepare(`SELECT min(created_at) FROM outbox WHERE state IN ('queued', 'sending')`)
      .pluck()
      .get() as string | null;
    const oldestAcceptedAt = sqlite
      .prepare(`SELECT min(accepted_at) FROM outbox WHERE state = 'accepted'`)
      .pluck()
      .get() as string | null;
    const finishedSince: Record<string, number> = {};
    for (const row of sqlite
      .prepare(
        `SELECT state, count(*) AS n FROM outbox
         WHERE state IN ('approved', 'rejected', 'failed', 'cancelled') AND finished_at >= ? GROUP BY state`,
      )
      .all(window.recentSince) as Array<{ state: string; n: number }>) {
      finishedSince[row.state] = row.n;
    }
    const pause = readPause(sqlite);
    const awaiting = awaitingDecision(sqlite, window.decisionCutoff);
    const recentFailures = sqlite
      .prepare(
        `SELECT marketplaceTransactionRef AS ref, operationType, last_error AS error, updated_at AS at
         FROM outbox WHERE state = 'failed' ORDER BY updated_at DESC, id DESC LIMIT 10`,
      )
      .all() as HealthSnapshot['outbox']['recentFailures'];
    const rejectedSince = sqlite
      .prepare(`SELECT count(*) FROM outbox WHERE state = 'rejected' AND decided_at >= ?`)
      .pluck()
      .get(window.recentSince) as number;
    const recentRejections = sqlite
      .prepare(
        `SELECT marketplaceTransactionRef AS ref, operationType, decision_reason AS reason, decided_at AS at
         FROM outbox WHERE state = 'rejected' ORDER BY decided_at DESC, id DESC LIMIT 10`,
      )
      .all() as HealthSnapshot['rejections']['recent'];

    const quarantine: Record<string, number> = {};
    for (const row of sqlite
      .prepare('SELECT resource, count(*) AS n FROM quarantine WHERE resolved_at IS NULL GROUP BY resource')
      .all() as Array<{ resource: string; n: number }>) {
      quarantine[row.resource] = row.n;
    }

    const webhooks = sqlite
      .prepare(
        `SELECT
           (SELECT count(*) FROM webhook_events WHERE received_at >= @since) AS received,
           (SELECT max(received_at) FROM webhook_events) AS lastReceivedAt,
           (SELECT count(*) FROM webhook_rejections WHERE at >= @since) AS verificationFailures,
           (SELECT reason FROM webhook_rejections ORDER BY id DESC LIMIT 1) AS lastFailureReason,
           (SELECT count(*) FROM webhook_events WHERE outcome = 'pending' AND received_at < @cutoff) AS pendingOlderThanCutoff,
           (SELECT count(*) FROM webhook_events WHERE id_reused = 1 AND received_at >= @since) AS idReused,
           (SELECT count(*) FROM webhook_events WHERE outcome = 'undecided' AND received_at >= @since) AS undecided`,
      )
      .get({ since: window.recentSince, cutoff: window.decisionCutoff }) as Omit<
      HealthSnapshot['webhooks'],
      'conflicts' | 'lastUndecided'
    >;
    const lastUndecided =
      webhooks.undecided > 0
        ? (sqlite
            .prepare(
              `SELECT event_type AS type, event_status AS status FROM webhook_events
                WHERE outcome = 'undecided' ORDER BY id DESC LIMIT 1`,
            )
            .get() as { type: string | null; status: string | null })
        : null;

    return {
      resources,
      outbox: {
        byState,
        oldestQueuedAt,
        paused: pause && { reason: pause.reason, since: pause.since },
        awaitingDecision: awaiting.length,
        oldestAwaitingAt: awaiting[0]?.accepted_at ?? null,
        oldestAcceptedAt,
        finishedSince,
        recentFailures,
      },
      rejections: { since: rejectedSince, recent: recentRejections },
      quarantine,
      webhooks: { ...webhooks, lastUndecided, conflicts: runSqlite(sqlite, decisionConflicts()).rowCount },
      database: databaseFaultsFor(sqlite).facts(),
      subscribers: subscriberBacklogs(sqlite),
    };
  });
  return read();
}

/** The learned page-size cap in a checkpoint's state JSON, if readable. */
export function learnedPageSize(state: string | null | undefined): number | undefined {
  if (!state) return undefined;
  try {
    const value = (JSON.parse(state) as { pageSize?: unknown } | null)?.pageSize;
    return typeof value === 'number' ? value : undefined;
  } catch {
    // An unreadable state counts as none learned, as the sync itself reads it.
    return undefined;
  }
}

/** The smaller of two optional numbers, null when neither is known. */
export function minKnown(a: number | undefined, b: number | undefined): number | null {
  if (a === undefined) return b ?? null;
  return b === undefined ? a : Math.min(a, b);
}
