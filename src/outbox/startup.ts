import { type Clock, isoAt } from '../clock.js';
import type { Logger } from '../log.js';
import type { OperationsStore } from '../operations/storeSeam.js';

/** Refs named in the start-up log line; the count covers the rest. */
const REFS_LOGGED = 20;

/**
 * Hands every `sending` row back to the queue at once (attempt not counted, lease cleared), so
 * a restart after a kill resumes delivery now instead of when the dead process's leases run out
 * (`outbox.lease_seconds`), with every later row on the same units waiting behind them.
 *
 * Only for the daemon that owns its store alone (SQLite's ownership lock): no other process claims
 * outbox rows, so every claim it finds at start-up belongs to a process that died. The operator
 * may have received those requests: delivery is at-least-once, with the same ref on the next attempt.
 * Returns how many rows went back.
 */
export async function releaseDeadClaims(store: OperationsStore, clock: Clock, log: Logger): Promise<number> {
  const rows = await store.releaseAll(isoAt(clock.now()));
  if (rows.length > 0) {
    log.warn(
      {
        event: 'outbox.released_at_start',
        rows: rows.length,
        refs: rows.slice(0, REFS_LOGGED).map((r) => r.ref),
      },
      `handed ${rows.length} operation(s) claimed by a process that died back to the queue`,
    );
  }
  return rows.length;
}
