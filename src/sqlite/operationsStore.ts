import { ScriptedOperationsStore } from '../operations/scriptedStore.js';
import type { TransactionOptions } from '../store/script.js';
import { stateChangeSinkOf } from './changes.js';
import { commitQueueFor } from './commitQueue.js';
import type { Sqlite } from './open.js';

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
