import { type DatabaseFacts, NO_FAULTS } from '../sqlite/faults.js';
import type { Series } from './series.js';

/**
 * Every fact health is judged on, read from the database in one short read transaction, so the
 * daemon, `vcu-sync status` in another process, and the metrics all judge the same numbers. The
 * statements are ./snapshotReads.ts's, written once for both stores.
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

/** Per subscriber: rows by state, and when the oldest undelivered one was written. */
export interface SubscriberBacklog {
  subscriber: string;
  pending: number;
  dead: number;
  delivered: number;
  /** created_at (or redriven_at) of the oldest pending/sending row; null when none. */
  oldestPendingAt: string | null;
  /** The last failure of the head row, masked. */
  lastError: string | null;
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
