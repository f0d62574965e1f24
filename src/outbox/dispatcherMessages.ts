/** The dispatcher thread's own messages (the ones every worker has are in thread/messages.ts). */
import type { SyncTarget, SyncTrigger } from '../common/syncRequests.js';

/** Main thread → dispatcher worker. */
export type DispatcherIn = { type: 'wake' };

/** Dispatcher worker → main thread. */
export type DispatcherOut =
  | { type: 'requestSync'; targets: SyncTarget[]; trigger: SyncTrigger }
  /** A claim or settle committed: readers waiting for new outbox changes may look again. */
  | { type: 'committed' }
  /** Sending was paused by an auth failure, or resumed: a paused dispatcher needs no wake-ups. */
  | { type: 'paused'; paused: boolean };
