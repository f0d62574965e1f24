import type { Clock } from '../common/clock.js';
import type { RequestSync } from '../common/syncRequests.js';
import type { AppContext } from '../context.js';
import type { OperationsStore } from '../operations/storeSeam.js';
import type { HousekeepingJob, OutboxHooks } from './hooks.js';

/** The dispatcher's inputs: what it needs from the daemon, and its options. */

/** What the dispatcher needs from the daemon. */
export type DispatcherContext = Pick<AppContext, 'config' | 'clock' | 'log' | 'metrics' | 'operator'>;

/** Options of the dispatcher; everything else comes from `config.outbox`. */
export interface DispatcherOptions {
  /** Asks the mirror for a custody sync when a decision calls for one (default: none). */
  requestSync?: RequestSync | undefined;
  /** Where time comes from (default: ctx.clock). */
  clock?: Clock;
  /** Random source for backoff jitter (default: Math.random). */
  random?: () => number;
  /** This dispatcher's lease owner name (default: host:pid:random). */
  owner?: string;
  /** How often personal fields of finished rows are scrubbed, ms (default: 3600000). */
  scrubEveryMs?: number;
  /**
   * On stop, how long requests in flight may take to finish before they are cancelled and their
   * rows handed back to the queue, ms (default: 10000).
   */
  stopGraceMs?: number;
  /**
   * Whether claiming is safe now, the daemon's liveness (app/liveness.ts; default: always): a
   * PostgreSQL replica that lost its liveness lock is presumed dead by the others, who may hand its claims back, so it claims nothing until
   * it holds the lock again (rows it has in flight are settled as ever, guarded by their lease).
   */
  mayClaim?: () => boolean;
  /**
   * Rows claimed beyond the free slots and held, leased, until a slot frees (outbox/claimAhead.ts):
   * where each claim is a round trip to a shared server, a slot whose request is answered takes its
   * next row at once, and its settle goes on beside that send (default: 0, none).
   */
  claimAhead?: number;
  /** Called after each claim or settle commit, e.g. to wake readers of the outbox's changes (default: none). */
  onCommitted?: () => void;
  /** Where rows are claimed, settled and released (on SQLite, calls join the connection's group commit). */
  store: OperationsStore;
  /**
   * The inbox side of an accepted row, the scrub of finished rows and the pause record, on the
   * store's database; null runs without them.
   */
  hooks: OutboxHooks | null;
  /**
   * Run after each scrub, when there are hooks: the subscribers' prune of old deliveries, handed in
   * by the root that wires the dispatcher (default: none).
   */
  housekeeping?: HousekeepingJob;
}
