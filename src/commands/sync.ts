import cliProgress from 'cli-progress';
import { UserError } from '../common/errors.js';
import { SYNC_TARGETS, type SyncTarget } from '../common/syncRequests.js';
import type { AppContext } from '../context.js';
import type { MirrorBackend } from '../mirror/backend.js';
import type { RunCounts } from '../mirror/bookkeeping.js';
import { type RunOutcome, runSync } from '../mirror/syncRun.js';
import type { LogAboveBars } from './logAboveBars.js';

/** Parsed arguments of `vcu-sync sync`. */
export interface SyncCommandOptions {
  /** Resources to sync, as named on the command line (default: all). */
  targets?: readonly string[];
  /** Units: a full scan instead of the incremental pass (default: false). */
  full?: boolean;
  /** Draw a progress bar per resource (default: whether stdout is a TTY). */
  tty?: boolean;
  /** Where the summary lines go (default: process.stdout). */
  out?: NodeJS.WritableStream;
  /** How retries wait (default: setTimeout). */
  sleep?: (ms: number) => Promise<void>;
  /** Where the runs read and write. */
  backend: MirrorBackend;
  /** Routes the log lines above the bars while they are drawn (default: none, the log writes as it will). */
  aboveBars?: LogAboveBars | undefined;
}

/** The targets named on the command line, checked; all when none (throws UserError naming a bad one). */
export function parseTargets(names: readonly string[] | undefined): SyncTarget[] {
  if (!names || names.length === 0) return [...SYNC_TARGETS];
  const out: SyncTarget[] = [];
  for (const name of names) {
    if (!(SYNC_TARGETS as readonly string[]).includes(name)) {
      throw new UserError(`sync: unknown resource "${name}" (expected ${SYNC_TARGETS.join(', ')})`);
    }
    if (!out.includes(name as SyncTarget)) out.push(name as SyncTarget);
  }
  return out;
}

/** One summary line per run (pure). */
export function summaryLine(o: RunOutcome): string {
  const c = o.counts;
  const secs = o.durationMs / 1000;
  const rate = secs > 0 ? Math.round(c.fetched / secs) : c.fetched;
  const counts =
    `${c.fetched} fetched, ${c.inserted} inserted, ${c.updated} updated, ${c.removed} removed, ` +
    `${c.unchanged} unchanged, ${c.quarantined} quarantined, ${c.pages} pages`;
  const tail = o.error ? `: ${o.error}` : '';
  return `${o.target}: ${o.status} (${o.mode}) ${counts} in ${secs.toFixed(1)} s (${rate}/s)${tail}`;
}

/**
 * `vcu-sync sync [projects|issuances|units|custody ...] [--full]`: one run of each named resource,
 * in order, then a summary line each. Exit code 0 only when every run succeeded.
 */
export async function runSyncCommand(ctx: AppContext, options: SyncCommandOptions): Promise<number> {
  const targets = parseTargets(options.targets);
  const out = options.out ?? process.stdout;
  const tty = options.tty ?? process.stdout.isTTY === true;
  const bars = tty
    ? new cliProgress.MultiBar(
        {
          format: '{resource} | {records} records | {pages} pages | {rate}/s | {status}',
          hideCursor: true,
          clearOnComplete: false,
          stopOnComplete: false,
          noTTYOutput: false,
        },
        cliProgress.Presets.shades_grey,
      )
    : undefined;
  if (bars) options.aboveBars?.attach(bars);
  const outcomes: RunOutcome[] = [];
  try {
    for (const target of targets) {
      const started = Date.now();
      const bar = bars?.create(0, 0, {
        resource: target.padEnd(9),
        records: 0,
        pages: 0,
        rate: 0,
        status: 'running',
      });
      const onProgress = (c: RunCounts) => {
        const secs = Math.max(0.001, (Date.now() - started) / 1000);
        bar?.update(c.fetched, { records: c.fetched, pages: c.pages, rate: Math.round(c.fetched / secs) });
      };
      const outcome = await runSync(ctx, target, {
        trigger: 'manual',
        full: options.full ?? false,
        sleep: options.sleep,
        onProgress,
        backend: options.backend,
      });
      bar?.update(outcome.counts.fetched, {
        records: outcome.counts.fetched,
        pages: outcome.counts.pages,
        status: outcome.status,
      });
      outcomes.push(outcome);
    }
  } finally {
    options.aboveBars?.detach();
    bars?.stop();
  }
  for (const outcome of outcomes) out.write(`${summaryLine(outcome)}\n`);
  return outcomes.every((o) => o.status === 'succeeded') ? 0 : 1;
}
