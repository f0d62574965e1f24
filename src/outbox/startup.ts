import { isoAt } from '../clock.js';
import type { AppContext } from '../context.js';
import { releaseAllClaims } from '../operations/store.js';

/** Refs named in the start-up log line; the count covers the rest. */
const REFS_LOGGED = 20;

/**
 * Hands every `sending` row back to the queue at once (attempt not counted, lease cleared), so
 * a restart after a kill resumes delivery now instead of when the dead process's leases run out
 * (`outbox.lease_seconds`), with every later row on the same units waiting behind them.
 *
 * Only for the daemon that owns the SQLite file (see sqlite/ownership.ts): no other process claims
 * outbox rows, so every claim it finds at start-up belongs to a process that died. The operator
 * may have received those requests: delivery is at-least-once, with the same ref on the next attempt.
 * Returns how many rows went back.
 */
export function releaseDeadClaims(ctx: Pick<AppContext, 'database' | 'clock' | 'log'>): number {
  const rows = releaseAllClaims(ctx.database.sqlite, isoAt(ctx.clock.now()));
  if (rows.length > 0) {
    ctx.log.warn(
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
