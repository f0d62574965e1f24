import { cancellableSleep } from '../common/clock.js';
import { busyRetryDelay } from './commitQueue.js';
import { databaseFaultsFor } from './faults.js';
import type { Sqlite } from './open.js';

/**
 * Runs a synchronous write outside the group commit, trying again later while another process holds
 * the write lock: the connection's short busy timeout bounds each try, and the waits between tries
 * are timers, so the event loop keeps answering. Other errors, and a lock still held when `signal`
 * aborts, are thrown; failures are noted in the connection's fault tracker.
 */
export async function whenUnlocked<T>(sqlite: Sqlite, run: () => T, signal?: AbortSignal): Promise<T> {
  const faults = databaseFaultsFor(sqlite);
  for (let tries = 1; ; tries++) {
    try {
      const value = run();
      faults.noteLockTaken();
      return value;
    } catch (err) {
      if (faults.noteFailure(err) !== 'busy' || signal?.aborted) throw err;
      await cancellableSleep(busyRetryDelay(tries), signal);
    }
  }
}
