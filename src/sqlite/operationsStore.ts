import type { AppContext } from '../context.js';
import { ScriptedOperationsStore } from '../operations/scriptedStore.js';
import { type OutboxAccess, outboxAccess } from '../outbox/access.js';
import { type OutboxHooks, outboxHooks } from '../outbox/hooks.js';
import { REQUEST_BUSY_GRACE_MS, type TransactionOptions } from '../store/script.js';
import { stateChangeSinkOf } from './changes.js';
import { commitQueueFor } from './commitQueue.js';
import { sqliteInboxStore } from './inboxStore.js';
import type { Sqlite } from './open.js';
import { purgeWalAfterScrub, purgeWalIfOwed } from './walPurge.js';

/**
 * The dispatcher's claims, settles and releases go on once committed, without waiting for the
 * commit's fsync: a power loss that takes one back only sends its row again (at-least-once, as
 * after any crash). A send slot waiting for an fsync after each answer halved the drain rate
 * against a bare POST loop (an fsync here costs as much as the operator's answer). What others
 * learn of them still waits for it: feed readers are woken once it is durable (./changes.ts).
 */
export const DISPATCHER_WORK: TransactionOptions = { durable: false };

/**
 * The operations store on a SQLite handle: each call one job of the connection's group commit (so
 * it commits with its neighbours, in one transaction of its own as far as atomicity goes), its
 * state changes through the handle's sink.
 */
export class SqliteOperationsStore extends ScriptedOperationsStore {
  constructor(sqlite: Sqlite) {
    super(commitQueueFor(sqlite), {
      sink: () => stateChangeSinkOf(sqlite),
      dispatcherWork: DISPATCHER_WORK,
    });
  }
}

/**
 * The dispatcher's hooks on a SQLite handle. A scrub leaves the old versions of the rows it
 * rewrote in the WAL (the file's own pages are zeroed as they are freed: `secure_delete`,
 * sqlite/open.ts), so the WAL is emptied after it (sqlite/walPurge.ts).
 */
export function sqliteOutboxHooks(sqlite: Sqlite): OutboxHooks {
  return outboxHooks(commitQueueFor(sqlite), sqliteInboxStore(sqlite), (rows) =>
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
