/** The mirror thread's own messages (the ones every worker has are in thread/messages.ts). */

import type { FeedMessage } from '../db/changeSignal.js';
import type { SyncTarget, SyncTrigger } from '../syncRequests.js';
import type { RunOutcome } from './syncRun.js';

/** Main thread → mirror worker: run (or join a coming run of) one target. */
export type SyncIn = { type: 'request'; id: number; target: SyncTarget; trigger: SyncTrigger; full: boolean };

/** Mirror worker → main thread: a requested run's outcome, or the feed's new head after a commit. */
export type SyncOut = { type: 'outcome'; id: number; outcome: RunOutcome } | FeedMessage;
