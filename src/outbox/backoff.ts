/** The outbox's retry timing is the one formula of src/backoff.ts (kept here so outbox imports stay put). */
export { type BackoffPolicy, backoffDelayMs, MAX_RETRY_AFTER_MS, retryDelayMs } from '../backoff.js';
