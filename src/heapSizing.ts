import { existsSync } from 'node:fs';
import v8 from 'node:v8';

/**
 * V8 sizes each thread's young generation from the host's memory: on Node 24 it may grow to
 * 2 x 64 MiB of semi-spaces on a host with a few GiB (Node 20: 2 x 16 MiB). A daemon under load
 * (1,600 feed clients, `npm run bench -- --only feedload`) kept all 128 MiB committed on the main
 * thread, a third of its RSS, an amount set by the host rather than by the work. And V8 let the old
 * generation grow to up to four times what was live at its last collection: at the bench's peak
 * 138 MB of heap were committed for 46 MB live. Both limits are start-up flags (V8 reads them
 * before any of our code runs), so the long-lived commands start Node again in the same process
 * (`process.execve`: same PID, for systemd and its notify socket) with {@link DAEMON_HEAP_FLAGS};
 * every thread's isolate takes them. The peak fell from ~370 MB to ~277 (docs/benchmarks.md, "The
 * feed under 1,600 clients"); more frequent full collections cost the enqueue p99 under a drain
 * (median 34 against 24 ms, three runs each of `npm run bench -- --only enqueue`).
 *
 * A `--max-semi-space-size` given by the user (on the command line or in NODE_OPTIONS) wins and
 * nothing is started again (the way out where a service manager forbids execve), and a Node
 * without `process.execve` (before 22.15) runs with V8's own sizing.
 */

/** The long-lived commands, whose memory is steady state rather than a peak. */
const DAEMON_COMMANDS = new Set(['run', 'demo']);

/** The daemon's heap: 2 x 16 MiB semi-spaces per thread; the old generation grown by 1.5x at a time. */
export const DAEMON_HEAP_FLAGS = ['--max-semi-space-size=16', '--heap-growing-percent=50'];

/** The flags Node must be started again with for `argv`, or null when it need not: pure, for the test. */
export function heapFlagsToAdd(
  argv: readonly string[],
  execArgv: readonly string[],
  nodeOptions: string | undefined,
): string[] | null {
  const command = argv.find((arg) => !arg.startsWith('-'));
  if (command === undefined || !DAEMON_COMMANDS.has(command)) return null;
  const given = [...execArgv, ...(nodeOptions ?? '').split(/\s+/)];
  if (given.some((flag) => /^--max[-_]semi[-_]space[-_]size\b/.test(flag))) return null;
  return DAEMON_HEAP_FLAGS;
}

/**
 * Sizes the heap for the command in `argv`: one-shot `sync` keeps its heap small with
 * `--optimize-for-size` (read as the heap is sized, so it may be set now: a 1,000,000-record sync
 * peaked at ~280 MB RSS, ~120 MB of it young generation), and the daemon's commands are started
 * again with {@link DAEMON_HEAP_FLAGS} (this call then does not return).
 */
export function sizeHeapFor(argv: readonly string[]): void {
  if (argv.includes('sync')) v8.setFlagsFromString('--optimize-for-size');
  const add = heapFlagsToAdd(argv, process.execArgv, process.env.NODE_OPTIONS);
  // Node (24.21) aborts the process when execve(2) fails rather than throwing: a binary that is
  // gone is checked first; a service manager that forbids execve needs the flag in ExecStart.
  if (add === null || typeof process.execve !== 'function' || !existsSync(process.execPath)) return;
  process.execve(
    process.execPath,
    [process.execPath, ...add, ...process.execArgv, ...process.argv.slice(1)],
    process.env,
  );
}
