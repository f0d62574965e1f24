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
 * every thread's isolate takes them. A one-shot `sync` is started again the same way, with
 * {@link SYNC_HEAP_FLAGS}. The peak fell from ~370 MB to ~277 (docs/benchmarks.md, "The
 * feed under 1,600 clients"); more frequent full collections cost the enqueue p99 under a drain
 * (median 34 against 24 ms, three runs each of `npm run bench -- --only enqueue`).
 *
 * A `--max-semi-space-size` given by the user (on the command line or in NODE_OPTIONS) wins and
 * nothing is started again (the way out where a service manager forbids execve), and a Node
 * without `process.execve` (before 22.15) runs with V8's own sizing.
 */

/** The daemon's heap: 2 x 16 MiB semi-spaces per thread; the old generation grown by 1.5x at a time. */
export const DAEMON_HEAP_FLAGS = ['--max-semi-space-size=16', '--heap-growing-percent=50'];

/**
 * A one-shot `sync`'s heap: 1 MiB semi-spaces, and V8's memory-saving heuristics. A sync's garbage
 * is a page's records, dead once committed; a young generation larger than that only holds more of
 * it. On 1,000,000 unit operations served unpaginated (`npm run bench -- --only rss`, three runs
 * each by hand) the peak fell from 123-127 MB to 117-122 MB and the CPU from 17.7-18.2 s to
 * 16.2-16.6 s: fewer bytes scavenged, each scavenge in cache.
 */
export const SYNC_HEAP_FLAGS = ['--max-semi-space-size=1', '--optimize-for-size'];

/** The commands started again with flags of their own: the long-lived ones and the one-shot sync. */
const COMMAND_HEAP_FLAGS: Readonly<Record<string, readonly string[]>> = {
  run: DAEMON_HEAP_FLAGS,
  demo: DAEMON_HEAP_FLAGS,
  sync: SYNC_HEAP_FLAGS,
};

/** The command word of `argv`: its first word that is neither an option nor `--config`'s value. */
function commandOf(argv: readonly string[]): string | undefined {
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    if (arg === '--config') i++;
    else if (!arg.startsWith('-')) return arg;
  }
  return undefined;
}

/** The flags Node must be started again with for `argv`, or null when it need not: pure, for the test. */
export function heapFlagsToAdd(
  argv: readonly string[],
  execArgv: readonly string[],
  nodeOptions: string | undefined,
): readonly string[] | null {
  const command = commandOf(argv);
  const flags = command === undefined ? undefined : COMMAND_HEAP_FLAGS[command];
  if (flags === undefined) return null;
  const given = [...execArgv, ...(nodeOptions ?? '').split(/\s+/)];
  if (given.some((flag) => /^--max[-_]semi[-_]space[-_]size\b/.test(flag))) return null;
  return flags;
}

/**
 * Sizes the heap for the command in `argv`: `run`, `demo` and `sync` are started again with their
 * flags (this call then does not return). A `sync` that is not (the user sized the young generation,
 * or Node has no execve) still gets `--optimize-for-size`, which V8 reads as the heap is sized and so
 * may be set now: a 1,000,000-record sync without it peaked at ~280 MB RSS, ~120 MB of it young
 * generation.
 */
export function sizeHeapFor(argv: readonly string[]): void {
  if (commandOf(argv) === 'sync') v8.setFlagsFromString('--optimize-for-size');
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
