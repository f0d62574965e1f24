import { Worker, type WorkerOptions } from 'node:worker_threads';

/**
 * A worker thread inherits the process's Node flags, and refuses those that belong to the process
 * (`node --max-old-space-size=256 bin/vcu-sync.js run`, a common line in a service unit, made
 * `new Worker` throw "invalid execArgv flags" and the daemon stop: dispatcher failed to start).
 * Node names the flags it refuses; the worker is started again without them. They still apply to
 * the process and its V8 (heap flags are process-wide); only the thread's own argument list drops
 * them.
 */
export function startWorker(url: URL | string, options: WorkerOptions): Worker {
  try {
    return new Worker(url, options);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ERR_WORKER_INVALID_EXEC_ARGV') throw err;
    const refused = refusedFlags((err as Error).message);
    const execArgv = (options.execArgv ?? process.execArgv).filter((flag) => !refused.has(flag));
    return new Worker(url, { ...options, execArgv });
  }
}

/**
 * The flags named by Node's ERR_WORKER_INVALID_EXEC_ARGV message ("Initiated Worker with invalid
 * execArgv flags: --a=1, --b"): pure, for the test.
 */
export function refusedFlags(message: string): Set<string> {
  const at = message.indexOf(': ');
  if (at < 0) return new Set();
  return new Set(
    message
      .slice(at + 2)
      .split(', ')
      .map((flag) => flag.trim())
      .filter((flag) => flag.startsWith('-')),
  );
}
