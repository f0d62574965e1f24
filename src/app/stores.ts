import type { ApiOptions, ApiSeams } from '../api/server.js';
import type { Metrics } from '../common/metrics.js';
import type { RequestSync } from '../common/syncRequests.js';
import type { AppContext, Component } from '../context.js';
import type { ChangeSignal } from '../db/changeSignal.js';
import type { InboxStore } from '../inbox/inboxStore.js';
import type { MirrorBackend } from '../mirror/backend.js';
import type { SyncRunner } from '../mirror/coordinator.js';
import type { ShapeReader } from '../mirror/shape/shapeReads.js';
import type { OperationsStore } from '../operations/storeSeam.js';
import type { OutboxAccess } from '../outbox/access.js';
import type { OutboxHooks } from '../outbox/hooks.js';
import type { ScriptStore } from '../store/script.js';
import type { DeliveriesAccess, DeliveriesStore } from '../subscribers/deliveriesStore.js';
import type { DeliveriesPrune } from '../subscribers/prune.js';
import type { Liveness } from './liveness.js';

/**
 * The store port: every seam the daemon and the commands reach the database through, whichever
 * database it is. Built by one of two factories (sqliteStores.ts, postgresStores.ts), picked once
 * from the configuration in openStores.ts; below this root nothing names a database. Code asks
 * what the store can do (`sharedByProcesses`), never which it is.
 */
export interface Stores {
  /** Several processes work on this store at once (PostgreSQL's replicas); else one owner (SQLite). */
  readonly sharedByProcesses: boolean;
  /** The outbox as the CLI reads, queues and steers it. */
  readonly outbox: OutboxAccess;
  /** The subscriber deliveries as the CLI reads and steers them. */
  readonly deliveriesAccess: DeliveriesAccess;
  /** A read-only look into the store by hand, as a shell command (the demo suggests it). */
  inspectHint(): string;
  /** Where a sync run reads and writes; one per use (a run's bookkeeping is its own). */
  mirrorBackend(): MirrorBackend;
  /** Where the reconciliation reads and records its findings (src/reconcile/). */
  readonly reconciliation: ScriptStore;
  /** Closes what the factory opened (SQLite: checkpoints the WAL, then gives up ownership). */
  close(): Promise<void>;
}

/** The seams and the extras a daemon runs on, beside the command's. */
export interface DaemonStores extends Stores {
  /** Who this process is to the store and whether it may claim now (./liveness.ts). */
  readonly liveness: Liveness;
  readonly operations: OperationsStore;
  /** The inbox side of an accepted row and the scrub of finished rows. */
  readonly outboxHooks: OutboxHooks;
  readonly inbox: InboxStore;
  readonly deliveries: DeliveriesStore;
  readonly pruneDeliveries: DeliveriesPrune;
  /** What the API serves from: its routes' seams, /readyz's facts, its 503 for a database fault. */
  readonly api: ApiSeams & ApiOptions;
  /** Announced when another process commits to the store (none where this one is the only writer). */
  readonly othersCommitted: ChangeSignal | undefined;
  /** Rows the outbox's dispatcher claims beyond its free slots (DispatcherOptions.claimAhead; default: 0). */
  readonly claimAhead?: number;
  /** Calls `fn` whenever the database is back after an outage (never where it cannot go away). */
  onReachable(fn: () => void): void;
  /** The store's own components, started after its liveness and before the API. */
  components(): Component[];
  /**
   * The dispatcher run in a thread of its own, where the store allows it and the configuration
   * asks; undefined runs it on this loop.
   */
  dispatcherThread(requestSync: RequestSync): (Component & { wake: () => void }) | undefined;
  /** Where the mirror's runs happen on this store: a coordinator here, or in a thread of its own. */
  mirrorRuns(): SyncRunner;
}

/** Options of {@link openCommandStores}. */
export interface CommandStoreOptions {
  /** Create (and migrate) the database when it does not exist (default: false: it must exist). */
  create?: boolean;
  /** The metrics to count into (default: a fresh prom-client set). */
  metrics?: Metrics;
}

/** A context over the store it was opened with. */
export interface Opened<S extends Stores> {
  ctx: AppContext;
  stores: S;
}

/** What `vcu-sync schema` reads: the learned shape, on a database opened to read only. */
export interface ShapeReads {
  read: ShapeReader;
  close(): Promise<void>;
}

/** A database the daemon of this version has never run on: no learned shape to read. */
export function noShapeTablesMessage(database: string): string {
  return `database ${database} has no schema_fields table: no daemon of this version has run on it (vcu-sync db migrate brings it up to date)`;
}
