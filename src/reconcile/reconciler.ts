import { backoffDelayMs } from '../common/backoff.js';
import { cancellableSleep, isoAt } from '../common/clock.js';
import { errorMessage } from '../common/errors.js';
import type { AppContext, Component } from '../context.js';
import type { ChangeSignal } from '../db/changeSignal.js';
import { filterIndexesReady } from '../mirror/filterIndexes.js';
import type { ScriptStore } from '../store/script.js';
import { ReconcileAgenda } from './agenda.js';
import { catchUpLedger, type FindingSink, type PassDeps, type PassOutcome, runPass } from './pass.js';
import { logPass } from './passLog.js';
import { type FeedRow, feedHead, issuancesTouched, touchedKeys, touchingFeed } from './touched.js';

/**
 * The reconciliation in the daemon (issue 29, item 4): a full pass in the background at start, then
 * passes scoped to the issuances the change feed says were touched (a sync page, a decision, a
 * custody read, an operation queued), batched over a short debounce; a scoped pass again when a
 * time-bound condition falls due (a retirement window ending, a decision turning overdue); a full
 * pass every `reconcile.full_every_hours`. A failure (the database away, busy) is logged and retried
 * with backoff, keeping what was touched; it never stops the daemon. Every replica of a shared store
 * may run it: the pass's writes take the feed's lock, one replica's after another's.
 */

/** Runs work after a delay; tests pass timers they advance (test/helpers/manualTimers.ts). */
export interface ReconcileTimers {
  /** Runs `work` once after `ms`; returns what cancels it. */
  after(ms: number, work: () => Promise<void>): () => void;
}

/** setTimeout, unref'd: the reconciler alone keeps no process alive. */
const realTimers: ReconcileTimers = {
  after(ms, work) {
    const timer = setTimeout(() => void work(), ms);
    timer.unref();
    return () => clearTimeout(timer);
  },
};

/** Options of {@link createReconcileComponent}. */
export interface ReconcileComponentOptions {
  /** Where passes read and record (the stores' `reconciliation` seam). */
  store: ScriptStore;
  /** Announced after each commit that appended to the feed (the API's feed signal). */
  changes: ChangeSignal;
  /** The subscribers' deliveries of opened and resolved findings, in the pass's transaction (default: none). */
  sink?: FindingSink | undefined;
  /** How long after a feed change the reconciler waits for more before it passes, ms (default: 1000). */
  debounceMs?: number;
  /** First retry delay after a failed round, doubled per failure, ms (default: 1000). */
  retryBaseMs?: number;
  /** Longest retry delay, ms (default: 60000). */
  retryCapMs?: number;
  /** How time-bound work is waited for, on the context's clock (default: setTimeout). */
  timers?: ReconcileTimers;
  /** Jitter source of the retry delay in [0, 1) (default: Math.random). */
  random?: () => number;
  /** Feed rows past which a round runs one full pass instead of mapping them to issuances (default: 2000000). */
  fullPassBacklog?: number;
  /** Told of each pass that went through (default: none). */
  onPass?: (outcome: PassOutcome) => void;
  /** How often a round looks again while the units log's filter indexes are being built, ms (default: 5000). */
  indexWaitMs?: number;
}

/** The component, and what the daemon's wiring may call. */
export interface ReconcileComponent extends Component {
  /** Runs a round now: cuts short a wait, the debounce or a retry's backoff. */
  wake(): void;
}

/** Feed rows read per statement. */
const FEED_PAGE = 1_000;
/** Longest single timer: a clock that jumps is noticed within it. */
const MAX_TIMER_MS = 3_600_000;
const HOUR_MS = 3_600_000;

export function createReconcileComponent(
  ctx: Pick<AppContext, 'config' | 'log' | 'clock'>,
  options: ReconcileComponentOptions,
): ReconcileComponent {
  const { log, clock, config } = ctx;
  const { store, changes } = options;
  const timers = options.timers ?? realTimers;
  const random = options.random ?? Math.random;
  const debounceMs = options.debounceMs ?? 1_000;
  // Feed rows a round maps at most: a longer backlog is a full pass instead.
  const backlog = options.fullPassBacklog ?? 2_000_000;
  const feedPage = Math.min(FEED_PAGE, backlog);
  const retry = { baseMs: options.retryBaseMs ?? 1_000, capMs: options.retryCapMs ?? 60_000 };
  const indexWaitMs = options.indexWaitMs ?? 5_000;
  const deps: PassDeps = {
    store,
    settings: { reconcile: config.reconcile, decisionWarnHours: config.status.decision_warn_hours },
    sink: options.sink,
    now: () => clock.now(),
  };
  const agenda = new ReconcileAgenda(config.reconcile.full_every_hours * HOUR_MS);
  /** The feed's seq up to which what it names is in the agenda (null: before the first full pass). */
  let cursor: number | null = null;
  let stopping = false;
  const stopped = new AbortController();
  /** Aborted by wake(): ends the current wait; renewed when a wait consumes it. */
  let poke = new AbortController();
  let loop: Promise<void> | undefined;

  /**
   * Reads the feed after the cursor a page at a time: the issuances each page's rows touched go on
   * the agenda, so that a long backlog (a first sync of the units log) costs small reads, not one
   * large one, and is never held whole.
   */
  async function collect(): Promise<void> {
    if (cursor === null) return;
    // Operations queued before the feed is read are in the ledger when their rows are mapped; one
    // queued after is among the ids the next round's catch-up returns.
    agenda.touch([...(await catchUpLedger(store, isoAt(clock.now())))]);
    let read = 0;
    for (;;) {
      const page: FeedRow[] = await store.read<FeedRow>(touchingFeed(cursor, feedPage));
      if (page.length === 0) return;
      read += page.length;
      agenda.touch([...(await issuancesTouched((s) => store.read(s), touchedKeys(page)))]);
      cursor = Number(page[page.length - 1]?.seq);
      if (page.length < feedPage) return;
      if (read >= backlog) {
        // A backlog past all reason: one full pass, which moves the cursor to the feed's head.
        agenda.owesFull();
        return;
      }
    }
  }

  /** One pass as the agenda plans it, recorded there when it went through. */
  async function pass(): Promise<void> {
    const plan = agenda.plan();
    if (plan.kind === 'none' || stopping) return;
    const startedAt = clock.now();
    const began = performance.now();
    let outcome: PassOutcome;
    if (plan.kind === 'full') {
      // The feed's head before the pass: what committed after it is read again, never missed.
      const head = Number((await store.read<{ head: number }>(feedHead()))[0]?.head ?? 0);
      outcome = await runPass(deps, null);
      cursor = head;
      agenda.fullDone(outcome, startedAt);
    } else {
      outcome = await runPass(deps, plan.scope);
      agenda.scopedDone(plan.scope, outcome);
    }
    logPass(log, outcome, Math.round(performance.now() - began));
    options.onPass?.(outcome);
  }

  /** Sleeps until the feed changes (then the debounce), wake(), the next due time, or the stop. */
  async function idle(version: number): Promise<void> {
    if (stopping || agenda.pending || consumePoke()) return;
    const waiting = new AbortController();
    const nextAt = agenda.nextAt();
    let cancelTimer = () => {};
    const reason = await new Promise<'feed' | 'other'>((resolve) => {
      const other = () => resolve('other');
      for (const s of [stopped.signal, poke.signal, waiting.signal])
        s.addEventListener('abort', other, { once: true });
      waiting.signal.addEventListener(
        'abort',
        () => {
          stopped.signal.removeEventListener('abort', other);
          poke.signal.removeEventListener('abort', other);
        },
        { once: true },
      );
      if (nextAt !== null) {
        const ms = Math.min(MAX_TIMER_MS, Math.max(0, nextAt - clock.now()));
        cancelTimer = timers.after(ms, async () => other());
      }
      void changes.whenChanged(version, waiting.signal).then((changed) => {
        if (changed) resolve('feed');
      });
    });
    waiting.abort();
    cancelTimer();
    consumePoke();
    // More commits usually follow the first (a sync's pages, a batch of decisions): one pass for them.
    if (reason === 'feed' && !stopping) await cancellableSleep(debounceMs, stopped.signal, poke.signal);
  }

  /** Whether wake() was called since the last wait; renews its signal. */
  function consumePoke(): boolean {
    if (!poke.signal.aborted) return false;
    poke = new AbortController();
    return true;
  }

  function wake(): void {
    poke.abort();
  }

  async function run(): Promise<void> {
    let failures = 0;
    while (!stopping) {
      // Taken before the feed is read: a commit after the read wakes the wait that follows.
      const version = changes.version;
      try {
        agenda.takeDue(clock.now());
        if (!agenda.wantsFull) await collect();
        // A pass reads the units log's retirements by issuance and status: while a first load has
        // their indexes down, it would scan the table (on SQLite, on the API's loop: the enqueue
        // p99 while a first load wrote went to 60-90 ms). What was touched stays on the agenda.
        if (!(await filterIndexesReady(store))) {
          log.debug(
            { event: 'reconcile.waiting', reason: 'filter-indexes' },
            "reconciliation waits for the units log's filter indexes",
          );
          await cancellableSleep(indexWaitMs, stopped.signal, poke.signal);
          consumePoke();
          continue;
        }
        await pass();
        if (failures > 0)
          log.info(
            { event: 'reconcile.recovered', failures },
            `reconciliation going again after ${failures} failed attempt(s)`,
          );
        failures = 0;
      } catch (err) {
        failures++;
        const retryInMs = backoffDelayMs(failures, retry, random);
        // An outage is said at once and then every tenth attempt (the database's own lines say the rest).
        log[failures === 1 || failures % 10 === 0 ? 'warn' : 'debug'](
          { event: 'reconcile.failed', error: errorMessage(err), failures, retryInMs },
          `reconciliation failed (${errorMessage(err)}); what was touched is kept, retrying in ${retryInMs} ms`,
        );
        await cancellableSleep(retryInMs, stopped.signal, poke.signal);
        consumePoke();
        continue;
      }
      await idle(version);
    }
  }

  return {
    name: 'reconciler',
    wake,
    async start() {
      // In the background: the first (full) pass never delays start-up or /readyz.
      loop = run().catch((err: unknown) => {
        log.error({ event: 'reconcile.crashed', err }, `the reconciler stopped: ${errorMessage(err)}`);
      });
    },
    async stop() {
      stopping = true;
      stopped.abort();
      // A pass under way finishes (its transaction is short); the daemon bounds the wait.
      await loop;
    },
  };
}
