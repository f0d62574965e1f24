/**
 * Runs scripts (store/script.ts) on SQLite, in the group commit: this queue is the handle's
 * ScriptStore. Group commit: writes submitted in the same turn of the event loop (enqueues from the API, the
 * dispatcher's claims and settles, webhooks) are stored in one SQLite transaction, so a burst costs
 * one fsync instead of one per write. Each task still runs in its own savepoint, so one failing task
 * does not take its neighbours down; every caller's promise settles only after the commit that holds
 * its work (a 201 or a webhook 2xx only after the write is durable).
 *
 * Another connection holding the write lock must not freeze the daemon: the group's BEGIN IMMEDIATE
 * does not wait for it at all (busy timeout 0 for that statement), and the batch is tried again
 * from a timer, soon at first, so the loop keeps answering. The lock is most often held by the
 * dispatcher's own thread for one short commit (outbox.dispatcher_thread): that is normal, retried
 * within a millisecond or two, and never reported unless it lasts. Background work waits as long as the lock is held; a request's write gives
 * up after its grace and is refused (the API answers 503 with Retry-After). Failed writes and
 * corruption are reported to the connection's fault tracker; a corrupt file refuses every task.
 */
import {
  isFeedStep,
  type Row,
  type Script,
  type ScriptStore,
  type TransactionOptions,
} from '../store/script.js';
import type { Sql } from '../store/sql.js';
import { durability, recordChanges } from './changes.js';
import { classifyDatabaseError, type DatabaseFaults, databaseFaultsFor, unavailableFor } from './faults.js';
import { journalsInMemory } from './journalsInMemory.js';
import type { Sqlite } from './open.js';
import { perHandle } from './perHandle.js';
import { runSqlite, sqliteDialect } from './scripts.js';
import { setPragma } from './setPragma.js';
import { WalSync } from './walSync.js';
import * as writerGate from './writerGate.js';

interface Task {
  run: () => unknown;
  /** Answered once committed, before the fsync (TransactionOptions.durable false). */
  early: boolean;
  resolve: (value: unknown) => void;
  reject: (err: unknown) => void;
  /** While the lock is held past this time (Date.now ms), the task is refused instead of retried. */
  busyDeadline: number;
  /** TransactionOptions.groupSpacingMs: 0 for a task that starts its group at once. */
  spacingMs: number;
}

type Settled = { ok: true; value: unknown } | { ok: false; error: unknown };

/**
 * Waits between tries while the lock is held, ms: every millisecond for the first
 * {@link BUSY_RETRY_PROMPT_TRIES} tries (the dispatcher thread's commits hold the lock for a
 * millisecond or so, and a bulk writer in the sync thread commits and gives way within one or two
 * once it sees the wait: writerGate.ts), then doubling up to the cap for a lock held by another
 * process.
 */
const BUSY_RETRY_FIRST_MS = 1;
const BUSY_RETRY_PROMPT_TRIES = 16;
const BUSY_RETRY_CAP_MS = 500;

/** The wait before the next try of a batch that found the lock held `tries` times in a row (pure). */
export function busyRetryDelay(tries: number): number {
  if (tries <= BUSY_RETRY_PROMPT_TRIES) return BUSY_RETRY_FIRST_MS;
  return Math.min(BUSY_RETRY_CAP_MS, BUSY_RETRY_FIRST_MS * 2 ** (tries - BUSY_RETRY_PROMPT_TRIES));
}

/** A task failed in a way SQLite answers by rolling back the whole transaction, not just the savepoint. */
class TransactionLost extends Error {
  constructor(readonly error: unknown) {
    super('the transaction was rolled back');
  }
}

/**
 * Drives `script` to its end now, on this handle, in whatever transaction the caller holds (a
 * group-commit job, or a `sqlite.transaction`): synchronously, each statement prepared once per
 * handle and text (./scripts.ts).
 */
export function driveSqlite<T>(sqlite: Sqlite, script: Script<T>): T {
  let step = script.next();
  try {
    while (!step.done) {
      const current = step.value;
      if (isFeedStep(current)) {
        recordChanges(sqlite, current.feed);
        step = script.next({ rows: [], rowCount: current.feed.length });
      } else {
        step = script.next(runSqlite(sqlite, current));
      }
    }
    return step.value;
  } finally {
    // A statement that threw leaves the script suspended: its `finally` blocks run now.
    if (!step.done) script.return(undefined as T);
  }
}

/** Runs synchronous database work, and scripts, in shared transactions. */
export class CommitQueue implements ScriptStore {
  readonly dialect = sqliteDialect;
  private tasks: Task[] = [];
  private scheduled = false;
  /** The timer of a group put off by its tasks' spacing, while one is: anything else cuts it short. */
  private spacedTimer: NodeJS.Timeout | null = null;
  /** When the last group of spaced tasks only started (performance.now ms). */
  private lastSpacedGroup = Number.NEGATIVE_INFINITY;
  private busyTries = 0;
  private readonly faults: DatabaseFaults;
  private readonly inSavepoint: (run: () => unknown) => unknown;
  private readonly batch: { immediate: (tasks: readonly Task[]) => Settled[] };
  private readonly totalChanges: () => number;
  private readonly busyTimeout: () => number;
  /** With `synchronous = FULL`: the group's fsync, run off the loop (./walSync.ts); null otherwise. */
  private readonly walSync: WalSync | null;
  /**
   * When the batch now waiting for the lock first found it held (performance.now ms), else null.
   * Non-null exactly while this queue has told the writer gate it waits (writerGate.ts).
   */
  private lockWaitSince: number | null = null;
  /**
   * Told how long each group waited for the lock and for its fsync, seconds (the daemon points it
   * at the `vcu_sync_database_wait_seconds` histogram: {@link observeCommitWaits}).
   */
  onWait: ((phase: 'lock' | 'fsync', seconds: number) => void) | null = null;

  /**
   * @param sqlite the database handle
   * @param maxBatch most tasks per transaction, bounding how long one commit holds the loop (default: 256)
   */
  constructor(
    private readonly sqlite: Sqlite,
    private readonly maxBatch = 256,
  ) {
    this.faults = databaseFaultsFor(sqlite);
    const changes = sqlite.prepare('SELECT total_changes()').pluck();
    this.totalChanges = () => changes.get() as number;
    const busy = sqlite.prepare('PRAGMA busy_timeout').pluck();
    this.busyTimeout = () => busy.get() as number;
    this.walSync = WalSync.for(sqlite);
    // A transaction function called inside another becomes a savepoint.
    this.inSavepoint = sqlite.transaction((run: () => unknown) => run());
    this.batch = sqlite.transaction((tasks: readonly Task[]) =>
      tasks.map((task): Settled => {
        try {
          return { ok: true, value: this.inSavepoint(task.run) };
        } catch (error) {
          // SQLITE_FULL or an I/O error can roll back the whole transaction: the tasks before this
          // one lost their work too, and the ones after would run outside any transaction.
          if (!this.sqlite.inTransaction) throw new TransactionLost(error);
          return { ok: false, error };
        }
      }),
    );
  }

  /** Runs `script` in the next group transaction, in a savepoint of its own; resolves after its commit. */
  transaction<T>(script: Script<T>, options?: TransactionOptions): Promise<T> {
    return this.submit(() => driveSqlite(this.sqlite, script), options);
  }

  /**
   * Runs one read now (outside the group: a read takes no write lock), answered on the loop's next
   * turn rather than as a microtask: a caller that reads again and again (the reconciler's round:
   * the ledger, the feed's pages, the scope's facts) would otherwise hold the loop through all its
   * reads, and the requests that arrived meanwhile would wait behind the whole round.
   */
  read<R extends object = Row>(statement: Sql): Promise<R[]> {
    return new Promise<R[]>((resolve) => {
      const rows = runSqlite(this.sqlite, statement).rows as R[];
      setImmediate(resolve, rows);
    });
  }

  /** Runs `run` (synchronous, no awaits) in the next group transaction; resolves after its commit. */
  submit<T>(run: () => T, options: TransactionOptions = {}): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const grace = options.busyGraceMs ?? Number.POSITIVE_INFINITY;
      this.tasks.push({
        run,
        early: options.durable === false,
        resolve: resolve as (value: unknown) => void,
        reject,
        busyDeadline: Date.now() + grace,
        spacingMs: options.groupSpacingMs ?? 0,
      });
      this.scheduleQueued();
    });
  }

  /**
   * Schedules the queued tasks' group: at once, unless every one of them may wait for the spacing
   * of spaced groups (TransactionOptions.groupSpacingMs); a task that may not cuts that wait short.
   */
  private scheduleQueued(): void {
    let spacing = Number.POSITIVE_INFINITY;
    for (const task of this.tasks) spacing = Math.min(spacing, task.spacingMs);
    const wait = Math.max(0, this.lastSpacedGroup + spacing - performance.now());
    if (this.spacedTimer && wait === 0) {
      clearTimeout(this.spacedTimer);
      this.spacedTimer = null;
      this.scheduled = false;
    }
    if (this.scheduled || this.tasks.length === 0) return;
    if (wait === 0) this.schedule(0);
    else {
      this.scheduled = true;
      this.spacedTimer = setTimeout(() => {
        this.spacedTimer = null;
        this.flush();
      }, wait);
    }
  }

  private schedule(delayMs: number): void {
    if (this.scheduled) return;
    this.scheduled = true;
    if (delayMs === 0) setImmediate(() => this.flush());
    else setTimeout(() => this.flush(), delayMs);
  }

  private flush(): void {
    this.scheduled = false;
    const refusal = this.faults.refusal();
    if (refusal) {
      this.leaveGate();
      for (const task of this.tasks.splice(0)) task.reject(refusal);
      return;
    }
    const tasks = this.tasks.splice(0, this.maxBatch);
    if (tasks.length === 0) return;
    if (tasks.every((t) => t.spacingMs > 0)) this.lastSpacedGroup = performance.now();
    const before = this.totalChanges();
    let results: Settled[];
    // Synchronous from here to the restore: nothing else on this thread sees the group's pragmas.
    const busyTimeout = this.busyTimeout();
    this.groupPragmas(true, busyTimeout);
    try {
      // IMMEDIATE: take the write lock up front, so reading then writing cannot deadlock with
      // another connection, and so a held lock fails here, before any task has run.
      results = journalsInMemory(this.sqlite, () => this.batch.immediate(tasks));
    } catch (thrown) {
      this.groupPragmas(false, busyTimeout);
      const error = thrown instanceof TransactionLost ? thrown.error : thrown;
      const kind = this.faults.noteFailure(error);
      if (kind === 'busy') {
        this.waitForLock(tasks, error);
        return;
      }
      this.leaveGate();
      const refused = kind ? unavailableFor(error, kind) : error;
      for (const task of tasks) task.reject(refused);
      this.scheduleQueued();
      return;
    }
    this.groupPragmas(false, busyTimeout);
    this.busyTries = 0;
    if (this.lockWaitSince !== null) this.onWait?.('lock', (performance.now() - this.lockWaitSince) / 1000);
    this.leaveGate();
    this.faults.noteLockTaken();
    this.scheduleQueued();
    const wrote = this.totalChanges() > before;
    if (!this.walSync || !wrote) {
      this.report(results, wrote);
      this.answer(tasks, results, () => true);
      return;
    }
    // Answered once the WAL is on disk; the next group is written meanwhile. Feed readers are woken
    // after it too (changes.ts reads this before it announces, on a later microtask). Tasks that
    // asked not to wait for it are answered now.
    const syncStart = performance.now();
    // A group nobody waits on (the dispatcher's) has its fsync started within a few ms, shared
    // with the groups after it: see walSync.ts EARLY_SYNC_WITHIN_MS.
    const awaited = tasks.some((t) => !t.early);
    const synced = awaited ? this.walSync.sync() : this.walSync.syncSoon();
    if (this.onWait && awaited)
      void synced.then(() => this.onWait?.('fsync', (performance.now() - syncStart) / 1000));
    durability(this.sqlite).pending = synced.catch(() => {});
    this.answer(tasks, results, (t) => t.early);
    synced.then(
      () => {
        this.report(results, true);
        this.answer(tasks, results, (t) => !t.early);
      },
      (error: unknown) => {
        this.faults.noteFailure(error);
        const kind = classifyDatabaseError(error);
        const refused = kind ? unavailableFor(error, kind) : error;
        for (const task of tasks) task.reject(refused);
      },
    );
  }

  /** Settles the promises of the tasks `which` picks with their results (once their work is durable, or early). */
  private answer(tasks: readonly Task[], results: readonly Settled[], which: (t: Task) => boolean): void {
    tasks.forEach((task, i) => {
      if (!which(task)) return;
      const result = results[i]!;
      if (result.ok) task.resolve(result.value);
      else task.reject(result.error);
    });
  }

  /**
   * Sets the pragmas of a group's transaction before its BEGIN (`on`), and undoes them after it:
   * - `busy_timeout = 0`: a held lock fails the BEGIN at once and the group is retried from a timer
   *   ({@link waitForLock}) rather than freezing the loop;
   * - with `synchronous = FULL`, `NORMAL`: the COMMIT writes the WAL and its sync runs off the loop
   *   (./walSync.ts).
   * The group's transaction keeps its savepoints' journals in memory too (./journalsInMemory.ts).
   */
  private groupPragmas(on: boolean, busyTimeout: number): void {
    setPragma(this.sqlite, `busy_timeout = ${on ? 0 : Math.trunc(busyTimeout)}`);
    if (this.walSync) setPragma(this.sqlite, `synchronous = ${on ? 'NORMAL' : 'FULL'}`);
  }

  /** Tells the fault tracker what the commit showed: a write that failed, or one that made it to disk. */
  private report(results: readonly Settled[], wrote: boolean): void {
    let failed = false;
    for (const result of results) {
      if (!result.ok && classifyDatabaseError(result.error) !== null) {
        this.faults.noteFailure(result.error);
        failed = true;
      }
    }
    // A batch that only read (a claim finding nothing) proves nothing about writing.
    if (!failed && wrote) this.faults.noteWriteSucceeded();
  }

  private leaveGate(): void {
    if (this.lockWaitSince === null) return;
    this.lockWaitSince = null;
    writerGate.leave();
  }

  /** Another process holds the write lock: refuse the tasks out of grace, retry the rest later. */
  private waitForLock(tasks: readonly Task[], error: unknown): void {
    const now = Date.now();
    const waiting = tasks.filter((task) => task.busyDeadline > now);
    const refused = unavailableFor(error, 'busy');
    for (const task of tasks) if (task.busyDeadline <= now) task.reject(refused);
    // Back at the front, in their order: a retried claim still follows the enqueue before it.
    this.tasks.unshift(...waiting);
    if (this.tasks.length === 0) {
      this.leaveGate();
      return;
    }
    if (this.lockWaitSince === null) {
      // A bulk writer in another thread commits what it has and gives way (writerGate.ts).
      this.lockWaitSince = performance.now();
      writerGate.arrive();
    }
    this.busyTries++;
    this.schedule(busyRetryDelay(this.busyTries));
  }
}

/**
 * The one commit queue of a connection, its script store: everything a daemon writes on the event
 * loop shares it, so an API enqueue, a dispatcher settle and a webhook arriving in the same turn
 * cost one fsync together.
 */
export const commitQueueFor: (sqlite: Sqlite) => CommitQueue = perHandle((sqlite) => new CommitQueue(sqlite));

/** Reports the lock and fsync waits of `sqlite`'s commit queue to the daemon's histogram. */
export function observeCommitWaits(
  sqlite: Sqlite,
  connection: 'main' | 'dispatcher',
  histogram: { observe(labels: { connection: string; phase: string }, seconds: number): void },
): void {
  commitQueueFor(sqlite).onWait = (phase, seconds) => histogram.observe({ connection, phase }, seconds);
}
