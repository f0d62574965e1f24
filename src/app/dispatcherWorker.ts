/**
 * The dispatcher's worker thread (see ./dispatcherThread.ts), and the root that wires it: its
 * claims, sends and settles run here, on their own event loop and their own database connection
 * (thread/workerSide.ts), so an HTTP answer or a commit's fsync of the dispatcher never holds the
 * loop that answers the API and the webhooks. Wake comes in; sync requests and "committed" go out.
 * A root (src/app/): it hands the thread's connection the subscribers' deliveries sink.
 */

import { claimAheadRows } from '../outbox/claimAhead.js';
import { createDispatcherComponent } from '../outbox/dispatcher.js';
import type { DispatcherIn, DispatcherOut } from '../outbox/dispatcherMessages.js';
import { useStateChangeSink } from '../sqlite/changes.js';
import { commitQueueFor, observeCommitWaits } from '../sqlite/commitQueue.js';
import { SqliteOperationsStore, sqliteOutboxHooks } from '../sqlite/operationsStore.js';
import { openSqliteWorkerStore, type SqliteWorkerStore } from '../sqlite/threadStore.js';
import { deliveriesHousekeeping } from '../subscribers/housekeeping.js';
import { deliveriesPrune } from '../subscribers/prune.js';
import { configuredDeliveriesSink } from '../subscribers/subscribers.js';
import { workerSide } from '../thread/workerSide.js';

// The dispatcher's commits (claims, settles, hand-backs and what they carry) are all work a power
// loss may take back harmlessly: the row is sent again, at-least-once, as after a crash. So they do
// not fsync one by one: 5,000 fsyncs in ten seconds of draining queued up behind the API's, whose
// 201s must wait for theirs (enqueue p99 while draining). The WAL still reaches the disk within
// 100 ms, at this thread's next checkpoint, or sooner with the API's next commit.
const side = workerSide<DispatcherOut, SqliteWorkerStore>('outbox.worker', (opening, config, log) =>
  openSqliteWorkerStore(opening, config, log, 'normal'),
);
const { sqlite } = side.store.database;
// The dispatcher's settles change operations: their deliveries commit with them, as on the main thread.
useStateChangeSink(sqlite, configuredDeliveriesSink(side.ctx.config));
observeCommitWaits(sqlite, 'dispatcher', side.ctx.metrics.databaseWait);
const component = createDispatcherComponent(side.ctx, {
  store: new SqliteOperationsStore(sqlite),
  hooks: sqliteOutboxHooks(sqlite),
  // The mirror runs elsewhere: a custody sync is asked for through the main thread.
  requestSync: async (targets, trigger) => {
    side.post({ type: 'requestSync', targets: [...targets], trigger });
    return true;
  },
  onCommitted: () => side.post({ type: 'committed' }),
  // As on the main loop (app/sqliteDaemon.ts): slots take rows claimed ahead between spaced groups.
  claimAhead: claimAheadRows(side.ctx.config),
  // The hourly scrub also prunes old deliveries.
  housekeeping: deliveriesHousekeeping(
    side.ctx.config,
    side.ctx.log,
    deliveriesPrune(commitQueueFor(sqlite)),
  ),
});
// The main thread stops posting wake-ups while sending is paused (./dispatcherThread.ts): told of
// each change within PAUSE_WATCH_MS. A pause ends only by this thread's own probe, which needs no wake.
const PAUSE_WATCH_MS = 100;
// null: nothing told yet, so a restarted worker corrects what the main thread heard from the last one.
let toldPaused: boolean | null = null;
setInterval(() => {
  const paused = component.dispatcher.paused !== null;
  if (paused === toldPaused) return;
  toldPaused = paused;
  side.post({ type: 'paused', paused });
}, PAUSE_WATCH_MS).unref();
await side.run<DispatcherIn>(component, (message) => {
  if (message.type === 'wake') component.wake();
});
