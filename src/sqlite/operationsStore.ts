import type { AppContext } from '../context.js';
import type { OperationRow } from '../operations/rows.js';
import { ScriptedOperationsStore } from '../operations/scriptedStore.js';
import type { AttemptRecord, Claim, ClaimParams, SettleStep } from '../operations/storeSeam.js';
import { type OutboxAccess, outboxAccess } from '../outbox/access.js';
import { type OutboxHooks, outboxHooks } from '../outbox/hooks.js';
import { REQUEST_BUSY_GRACE_MS } from '../store/script.js';
import { stateChangeSinkOf } from './changes.js';
import { commitQueueFor } from './commitQueue.js';
import { type AcceptedCall, DISPATCHER_WORK, dispatcherBatchesFor } from './dispatcherBatches.js';
import type { Sqlite } from './open.js';
import { purgeWalAfterScrub, purgeWalIfOwed } from './walPurge.js';

export { DISPATCHER_WORK } from './dispatcherBatches.js';

/**
 * The operations store on a SQLite handle: each call one job of the connection's group commit (so
 * it commits with its neighbours, in one transaction of its own as far as atomicity goes), its
 * state changes through the handle's sink. The dispatcher's claims and settles made while a group
 * is pending join one job per kind for the group (./dispatcherBatches.ts).
 */
export class SqliteOperationsStore extends ScriptedOperationsStore {
  private readonly batches: ReturnType<typeof dispatcherBatchesFor>;

  constructor(sqlite: Sqlite) {
    super(commitQueueFor(sqlite), {
      sink: () => stateChangeSinkOf(sqlite),
      dispatcherWork: DISPATCHER_WORK,
    });
    this.batches = dispatcherBatchesFor(sqlite);
  }

  override claim(params: ClaimParams | (() => ClaimParams)): Promise<OperationRow[]> {
    return this.batches.claims.add(typeof params === 'function' ? params : () => params);
  }

  override settle(claim: Claim, attempt: AttemptRecord, step: SettleStep): Promise<boolean> {
    return this.batches.settles.add({ claim, attempt, step });
  }
}

/**
 * The dispatcher's hooks on a SQLite handle. A scrub leaves the old versions of the rows it
 * rewrote in the WAL (the file's own pages are zeroed as they are freed: `secure_delete`,
 * sqlite/open.ts), so the WAL is emptied after it (sqlite/walPurge.ts).
 */
export function sqliteOutboxHooks(sqlite: Sqlite): OutboxHooks {
  // An accepted row's inbox side joins its neighbours' (./dispatcherBatches.ts).
  const { accepted } = dispatcherBatchesFor(sqlite);
  const inbox = { afterAccepted: (op: AcceptedCall['op'], nowIso: string) => accepted.add({ op, nowIso }) };
  return outboxHooks(commitQueueFor(sqlite), inbox, (rows) =>
    rows > 0 ? purgeWalAfterScrub(sqlite) : purgeWalIfOwed(sqlite),
  );
}

/**
 * The outbox on a SQLite handle. `grouped` (the API's): an enqueue joins the connection's group
 * commit with the dispatcher's claim it wakes, and a request is refused after a short wait for
 * another process's lock; else (the CLI's) it waits up to `database.busy_timeout_ms`.
 */
export function sqliteOutbox(
  ctx: Pick<AppContext, 'clock' | 'config'>,
  sqlite: Sqlite,
  options: { grouped: boolean },
): OutboxAccess {
  return outboxAccess(ctx, commitQueueFor(sqlite), new SqliteOperationsStore(sqlite), {
    busyGraceMs: options.grouped ? REQUEST_BUSY_GRACE_MS : ctx.config.database.busy_timeout_ms,
    wakeBeforeCommit: options.grouped,
  });
}
