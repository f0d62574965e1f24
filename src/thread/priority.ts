/**
 * A background thread's CPU priority. On a small host the daemon's threads share the cores with
 * each other and with whatever else runs there; when they compete, the thread that answers the API
 * and the webhooks must win and a bulk sync must wait, not the reverse (a profile of the enqueue
 * benchmark showed the main thread descheduled for 100+ ms in trivial functions while the sync
 * thread parsed pages). Linux sets a niceness per thread: `setpriority` with the thread's own id,
 * which `/proc/thread-self` names. Lowering one's own priority needs no privilege; elsewhere (or
 * when /proc is missing) the thread keeps its priority and says so.
 */
import { readlinkSync } from 'node:fs';
import os from 'node:os';

/** This thread's kernel id (Linux), or null where it cannot be read. */
export function threadId(): number | null {
  try {
    const tid = Number(readlinkSync('/proc/thread-self').split('/').pop());
    return Number.isInteger(tid) && tid > 0 ? tid : null;
  } catch {
    return null;
  }
}

/** Lowers this thread's CPU priority to `nice` (0-19); returns the thread id and niceness now, or null. */
export function lowerThreadPriority(nice: number): { tid: number; nice: number } | null {
  const tid = threadId();
  if (tid === null) return null;
  try {
    os.setPriority(tid, nice);
    return { tid, nice: os.getPriority(tid) };
  } catch {
    return null;
  }
}
