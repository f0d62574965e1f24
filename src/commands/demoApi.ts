import type { SyncTarget } from '../common/syncRequests.js';
import type { Health } from '../health/health.js';
import { UNSENT_STATES } from '../operations/states.js';

/**
 * The demo's daemon as a user reaches it: its API over loopback with the demo's token (enqueue,
 * status, sync requests), and the waits the demo needs on what status shows. Every wait is bounded.
 */
export interface DemoApi {
  /** Queues one notification; a line saying why when the API refused it or could not be reached, else null. */
  enqueue(body: Record<string, unknown>): Promise<string | null>;
  /** `GET /status`; null when it does not answer. */
  status(): Promise<Health | null>;
  /** Requests a sync of `resource` and waits (up to `timeoutMs`) for a run started after the request to end; whether one did. */
  syncAndWait(resource: SyncTarget, timeoutMs: number): Promise<boolean>;
  /** Waits (up to `timeoutMs`) for every queued operation to be sent; whether they were. */
  allSent(timeoutMs: number): Promise<boolean>;
}

/** How often a wait reads status again. */
const POLL_MS = 100;

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls `check` until it is true or `timeoutMs` passed; whether it became true. */
export async function waitUntil(
  check: () => Promise<boolean> | boolean,
  timeoutMs: number,
): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return true;
    if (Date.now() >= deadline) return false;
    await pause(POLL_MS);
  }
}

/** How many operations have not reached the operator yet (queued or sending), as /status counts them. */
export function unsent(health: Health): number {
  return UNSENT_STATES.reduce((n, state) => n + (health.snapshot.outbox.byState[state] ?? 0), 0);
}

/** Whether status shows a run of `resource` that started at or after `since` (ms) and has ended (pure). */
export function ranSince(health: Health, resource: SyncTarget, since: number): boolean {
  const last = health.snapshot.resources.find((r) => r.resource === resource)?.lastRun;
  return !!last && last.status !== 'running' && Date.parse(last.startedAt) >= since;
}

export function demoApi(base: string, token: string): DemoApi {
  const authorization = `Bearer ${token}`;
  const status = (): Promise<Health | null> =>
    fetch(`${base}/status`, { headers: { authorization } }).then(
      // 503 is a critical status, still a full answer.
      (res) => (res.status === 200 || res.status === 503 ? (res.json() as Promise<Health>) : null),
      () => null,
    );
  return {
    status,
    async enqueue(body) {
      try {
        const res = await fetch(`${base}/v1/operations`, {
          method: 'POST',
          headers: { authorization, 'content-type': 'application/json' },
          body: JSON.stringify(body),
        });
        return res.status === 201 ? null : `enqueue answered ${res.status}: ${await res.text()}`;
      } catch (err) {
        return `enqueue failed: ${(err as Error).message}`;
      }
    },
    async syncAndWait(resource, timeoutMs) {
      // Status times are the daemon's clock, this process's: a run started from now on is one that
      // began after the request (a run already going when it came is followed by another).
      const since = Date.now();
      const res = await fetch(`${base}/v1/sync/${resource}`, {
        method: 'POST',
        headers: { authorization },
      }).catch(() => null);
      if (res?.status !== 202) return false;
      return waitUntil(async () => {
        const health = await status();
        return !!health && ranSince(health, resource, since);
      }, timeoutMs);
    },
    allSent(timeoutMs) {
      return waitUntil(async () => {
        const health = await status();
        return !!health && unsent(health) === 0;
      }, timeoutMs);
    },
  };
}
