import { setMaxListeners } from 'node:events';
import cron, { type ScheduledTask } from 'node-cron';
import { cancellableSleep } from '../common/clock.js';
import type { SyncRequests, SyncTarget } from '../common/syncRequests.js';
import { SYNC_TARGETS } from '../common/syncRequests.js';
import type { AppContext, Component } from '../context.js';
import type { SyncRunner } from './coordinator.js';
import { realSleep } from './retry.js';

/** Options of {@link createMirrorComponent}. */
export interface MirrorComponentOptions {
  /** How jitter waits (default: setTimeout). */
  sleep?: (ms: number) => Promise<void>;
  /** Source of jitter in [0, 1) (default: Math.random). */
  random?: () => number;
  /** Served while the scheduler runs: how the API, webhooks and dispatcher ask for syncs (default: none). */
  syncRequests?: SyncRequests;
  /** Where runs happen: a SyncCoordinator here, or one in a worker thread (the store's factory picks). */
  runner: SyncRunner;
}

/** The jitter before a scheduled run, ms (pure). */
export function jitterMs(jitterSeconds: number, random: number): number {
  return Math.floor(random * jitterSeconds * 1000);
}

/**
 * The mirror in the daemon: marks runs that died as interrupted, schedules one cron task per
 * resource (`sync.schedule`, "off" disables), syncs everything at start-up when asked, and
 * serves `options.syncRequests` (API, webhooks, accepted Tokenizations). Stopping ends schedules and waits for runs,
 * which stop between pages with their checkpoints kept.
 */
export function createMirrorComponent(ctx: AppContext, options: MirrorComponentOptions): Component {
  const sleep = options.sleep ?? realSleep;
  const random = options.random ?? Math.random;
  const coordinator = options.runner;
  const tasks: ScheduledTask[] = [];
  let stopping = false;
  let unserve: (() => void) | undefined;
  const stopped = new AbortController();
  // Every scheduled resource waits on this one signal (jitter, retries, requests): more than the
  // default ten listeners is normal here, not a leak.
  setMaxListeners(64, stopped.signal);
  // A jitter wait must end with the stop, or its timer keeps a stopped process alive.
  const jitter = (ms: number) => (sleep === realSleep ? cancellableSleep(ms, stopped.signal) : sleep(ms));

  const requestAll = (
    targets: readonly SyncTarget[],
    trigger: 'startup' | 'schedule' | 'manual' | 'api' | 'webhook',
  ) => {
    for (const target of targets) {
      coordinator.request(target, trigger).catch((err: unknown) => {
        ctx.log.error({ event: 'sync.run.crashed', resource: target, err }, 'sync run crashed');
      });
    }
  };

  return {
    name: 'mirror',
    async start() {
      // The runner marks the runs that died with a previous process first.
      await coordinator.start?.();
      unserve = options.syncRequests?.serve((targets, trigger) => {
        if (!stopping) requestAll(targets, trigger);
      });
      for (const target of SYNC_TARGETS) {
        const expr = ctx.config.sync.schedule[target];
        if (expr === 'off') continue;
        const task = cron.schedule(
          expr,
          async () => {
            await jitter(jitterMs(ctx.config.sync.jitter_seconds, random()));
            if (stopping) return;
            // Returned so noOverlap can skip a tick while the run is still going.
            await coordinator.request(target, 'schedule');
          },
          { noOverlap: true, name: `sync-${target}` },
        );
        tasks.push(task);
      }
      ctx.log.info(
        { event: 'sync.scheduler.started', schedules: ctx.config.sync.schedule },
        'mirror scheduler started',
      );
      if (ctx.config.sync.on_startup) requestAll(SYNC_TARGETS, 'startup');
    },
    async stop() {
      stopping = true;
      stopped.abort();
      for (const task of tasks) await task.stop();
      tasks.length = 0;
      unserve?.();
      unserve = undefined;
      await coordinator.stop();
    },
  };
}
