/**
 * The mirror's worker thread (see sqlite/syncThread.ts): sync runs fetch, parse, validate, hash and
 * write here, on their own event loop and database connection, so a page's work never holds the loop
 * that answers the API and the webhooks. Its bulk writes give way to the API's commits at the writer
 * gate (sqlite/writerGate.ts). Requests come in; outcomes and the feed's head after each commit go out.
 * A root (src/app/): it wires the thread's feed forwarding (feed/bridge.ts) to its connection.
 */

import { errorMessage } from '../common/errors.js';
import type { Component } from '../context.js';
import { forwardFeed } from '../feed/bridge.js';
import { SyncCoordinator } from '../mirror/coordinator.js';
import { restoreFilterIndexes } from '../mirror/filterIndexes.js';
import { outcomeWithoutRun } from '../mirror/syncRun.js';
import { changeSignalFor } from '../sqlite/changes.js';
import { sqliteBackend } from '../sqlite/mirror.js';
import type { SyncIn, SyncOut } from '../sqlite/syncThread.js';
import { openSqliteWorkerStore, type SqliteWorkerStore } from '../sqlite/threadStore.js';
import { configuredSchemaChangesSink } from '../subscribers/subscribers.js';
import { workerSide } from '../thread/workerSide.js';

// No state-change sink: a sync changes no operation (only the main thread and the dispatcher do).
const side = workerSide<SyncOut, SqliteWorkerStore>('sync.worker', openSqliteWorkerStore);
const { sqlite } = side.store.database;
const onSchemaChange = configuredSchemaChangesSink(side.ctx.config);
const coordinator = new SyncCoordinator(side.ctx, (stop) => sqliteBackend(sqlite, stop, onSchemaChange));
// Readers of the feed wait in the main thread: each commit here wakes them there.
const unforward = forwardFeed(changeSignalFor(sqlite), { postMessage: side.post });
/**
 * The filter indexes a killed first load left missing, put back before any run here (the main
 * thread's syncThread.start has marked the dead runs by then); requests wait for it.
 */
let restored: Promise<void> = Promise.resolve();
const component: Component = {
  name: 'mirror',
  async start() {
    restored = restoreFilterIndexes(side.ctx, sqliteBackend(sqlite));
    await restored;
  },
  async stop() {
    // Runs stop between pages with their checkpoints kept, and end as interrupted.
    await coordinator.stop();
    unforward();
  },
};
/**
 * Below the main thread's CPU priority (thread/priority.ts): when the cores are contended, the
 * loop answering the API and webhooks runs first and a sync waits; on an idle host nothing changes.
 */
const SYNC_THREAD_NICE = 10;

await side.run<SyncIn>(
  component,
  (message) => {
    // The coordinator never rejects for what the operator or the data did; a crash of its own is
    // reported as the run's failure.
    void restored
      .then(() => coordinator.request(message.target, message.trigger, message.full))
      .then(
        (outcome) => side.post({ type: 'outcome', id: message.id, outcome }),
        (err: unknown) => {
          side.ctx.log.error(
            { event: 'sync.run.crashed', resource: message.target, err },
            'sync run crashed',
          );
          side.post({
            type: 'outcome',
            id: message.id,
            outcome: outcomeWithoutRun(message.target, 'failed', errorMessage(err)),
          });
        },
      );
  },
  { nice: SYNC_THREAD_NICE },
);
