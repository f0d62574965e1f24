import { setMaxListeners } from 'node:events';
import type { SyncTarget, SyncTrigger } from '../common/syncRequests.js';
import type { AppContext } from '../context.js';
import type { MirrorBackend } from './backend.js';
import { restoreFilterIndexes } from './filterIndexes.js';
import { type RunOutcome, type RunSyncOptions, runSync } from './syncRun.js';

/** Options of {@link SyncCoordinator}. */
export interface CoordinatorOptions {
  /** How retries wait (default: setTimeout). */
  sleep?: (ms: number) => Promise<void>;
}

/** Where the mirror component's runs happen: a SyncCoordinator here, or one in a worker thread. */
export interface SyncRunner {
  start?(): Promise<void>;
  request(target: SyncTarget, trigger: SyncTrigger, full?: boolean): Promise<RunOutcome>;
  stop(): Promise<void>;
}

interface Lane {
  running: Promise<RunOutcome> | undefined;
  /** One follow-up run, shared by every request made while a run was in progress. */
  queued: Promise<RunOutcome> | undefined;
  queuedFull: boolean;
}

/**
 * One run per target at a time in this process. A request while a run is in progress is coalesced
 * into a single follow-up run (so a custody deposit that arrives mid-run is still read), however many
 * requests arrive meanwhile.
 */
export class SyncCoordinator implements SyncRunner {
  private readonly lanes = new Map<SyncTarget, Lane>();
  private readonly abort = new AbortController();
  private readonly backend: MirrorBackend;

  /** `backend` makes where runs read and write, given the signal that stops them (at stop). */
  constructor(
    private readonly ctx: AppContext,
    backend: (stop: AbortSignal) => MirrorBackend,
    private readonly options: CoordinatorOptions = {},
  ) {
    // All resources' runs (their page requests and retry waits) listen on this one signal at once.
    setMaxListeners(64, this.abort.signal);
    this.backend = backend(this.abort.signal);
  }

  /**
   * Marks the runs a dead process left `running` as interrupted, before any run here, and puts back
   * the filter indexes a killed first load left missing.
   */
  async start(): Promise<void> {
    this.backend.lock.recover?.(this.ctx);
    await restoreFilterIndexes(this.ctx, this.backend);
  }

  /** Runs (or joins a coming run of) `target`; resolves with that run's outcome. */
  request(target: SyncTarget, trigger: SyncTrigger, full = false): Promise<RunOutcome> {
    let lane = this.lanes.get(target);
    if (!lane) {
      lane = { running: undefined, queued: undefined, queuedFull: false };
      this.lanes.set(target, lane);
    }
    if (!lane.running) return this.startRun(lane, target, { trigger, full });
    lane.queuedFull ||= full;
    if (!lane.queued) {
      const current = lane.running;
      const l = lane;
      lane.queued = current.then(() => {
        l.queued = undefined;
        const wantFull = l.queuedFull;
        l.queuedFull = false;
        return this.startRun(l, target, { trigger, full: wantFull });
      });
    }
    return lane.queued;
  }

  private startRun(
    lane: Lane,
    target: SyncTarget,
    opts: Pick<RunSyncOptions, 'trigger' | 'full'>,
  ): Promise<RunOutcome> {
    const run = runSync(this.ctx, target, {
      ...opts,
      sleep: this.options.sleep,
      backend: this.backend,
      signal: this.abort.signal,
    }).finally(() => {
      if (lane.running === run) lane.running = undefined;
    });
    lane.running = run;
    return run;
  }

  /** Whether any run is in progress. */
  get busy(): boolean {
    return [...this.lanes.values()].some((l) => l.running !== undefined);
  }

  /** Stops taking runs, asks running ones to stop between pages, and waits for them. */
  async stop(): Promise<void> {
    this.abort.abort();
    const pending = [...this.lanes.values()]
      .flatMap((l) => [l.running, l.queued])
      .filter((p) => p !== undefined);
    await Promise.allSettled(pending);
  }
}
