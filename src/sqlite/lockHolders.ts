import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

/**
 * Who holds a lock file through a folder we cannot name (Linux, best effort): the kernel lists every
 * POSIX lock in /proc/locks with its holder's pid, and /proc/<pid>/fd names the files that process
 * has open. Used only to name the daemon in a refusal that is decided anyway (ownership.ts); where
 * /proc is hidden (the shipped unit's ProcSubset=pid) or another user's process is not readable,
 * the answer is "unknown".
 */

/** The pids holding a POSIX write lock, in /proc/locks' text (pure). Waiters (`->`) hold nothing. */
export function posixWriteLockHolders(procLocks: string): number[] {
  const pids = new Set<number>();
  for (const line of procLocks.split('\n')) {
    const m = /^\d+:\s+POSIX\s+ADVISORY\s+WRITE\s+(\d+)\s/.exec(line);
    if (m) pids.add(Number(m[1]));
  }
  return [...pids];
}

/**
 * The pid of a process holding a POSIX write lock while it has open a file named `lockName` in a
 * folder other than `except`'s, or undefined when none can be seen.
 */
export function holderOfLockNamed(lockName: string, except: string): number | undefined {
  let procLocks: string;
  try {
    procLocks = readFileSync('/proc/locks', 'utf8');
  } catch {
    return undefined;
  }
  for (const pid of posixWriteLockHolders(procLocks)) {
    let fds: string[];
    try {
      fds = readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue;
    }
    for (const fd of fds) {
      let target: string;
      try {
        target = readlinkSync(`/proc/${pid}/fd/${fd}`);
      } catch {
        continue;
      }
      if (target !== except && target.endsWith(`/${lockName}`)) return pid;
    }
  }
  return undefined;
}
