/**
 * The dispatcher's worker thread (see dispatcherThread.ts): its claims, sends and settles run here,
 * on their own event loop and their own database connection (thread/workerSide.ts), so an HTTP
 * answer or a commit's fsync of the dispatcher never holds the loop that answers the API and the
 * webhooks. Wake comes in; sync requests and "committed" go out.
 */
import { observeCommitWaits } from '../db/commitQueue.js';
import { workerSide } from '../thread/workerSide.js';
import { createDispatcherComponent } from './dispatcher.js';
import type { DispatcherIn, DispatcherOut } from './dispatcherMessages.js';

const side = workerSide<DispatcherOut>('outbox.worker');
observeCommitWaits(side.ctx.database.sqlite, 'dispatcher', side.ctx.metrics.databaseWait);
const component = createDispatcherComponent(side.ctx, {
  // The mirror runs elsewhere: a custody sync is asked for through the main thread.
  requestSync: async (targets, trigger) => {
    side.post({ type: 'requestSync', targets: [...targets], trigger });
    return true;
  },
  onCommitted: () => side.post({ type: 'committed' }),
});
await side.run<DispatcherIn>(component, (message) => {
  if (message.type === 'wake') component.wake();
});
