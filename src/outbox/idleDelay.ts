/** What the dispatcher's loop knows when it has nothing more to claim. */
export interface IdleView {
  /** `outbox.poll_ms`: the longest sleep. */
  pollMs: number;
  nowMs: number;
  /** When a paused outbox sends its next probe (null when not paused). */
  probeAtMs: number | null;
  /** Every send slot busy. */
  full: boolean;
  /** The last claim returned no row. */
  claimedNothing: boolean;
}

/**
 * How long the loop sleeps when nothing more can be claimed: until the next due row, at most a
 * poll. A due row the claim passed over waits behind its unit's row in flight (or is another
 * replica's): that send's end wakes the loop, so it sleeps till then rather than claim again and
 * again. `nextDueAt` is asked only when the answer depends on it.
 */
export async function idleDelayMs(view: IdleView, nextDueAt: () => Promise<string | null>): Promise<number> {
  const { pollMs, nowMs } = view;
  if (view.probeAtMs !== null) return Math.max(0, Math.min(pollMs, view.probeAtMs - nowMs));
  // Every slot busy: nothing can be claimed until a send ends, and its end wakes the loop. Asking
  // when the next row is due would answer "now" while rows wait, and the loop would spin on that
  // query (one a millisecond, a round trip each on PostgreSQL) for as long as it is full.
  if (view.full) return pollMs;
  const due = await nextDueAt();
  if (!due) return pollMs;
  const wait = Date.parse(due) - nowMs;
  if (wait <= 0 && view.claimedNothing) return pollMs;
  return Math.max(0, Math.min(pollMs, wait));
}
