import type { OperationRow } from '../operations/rows.js';

/**
 * Rows claimed ahead of the free slots, held here (leased, `sending`) until a slot frees: a slot
 * whose request is answered takes its next row at once instead of waiting for a claim's round trip,
 * and claims run in the background, one waiting for the store's next group at a time, beside the
 * settles that free their units' next rows (PostgreSQL's settleGroup.ts: settles first, so a claim
 * sees the rows they free). Per-key order is the store's, as for any claim: only the oldest
 * unsettled row of a key is claimable, so the buffer holds at most one row per key, and the next
 * one is claimed only after it settles. What is held here is bounded ({@link ClaimAheadDeps.cap}),
 * each row is sent only while its lease still covers a whole request ({@link ClaimAheadDeps.maxWaitMs}),
 * and a stop, a pause or a lost liveness lock hands the rows back ({@link ClaimAhead.drain}).
 */

/** What {@link ClaimAhead} needs from the dispatcher. */
export interface ClaimAheadDeps {
  /** Claims up to `limit()` rows; `limit` is read when the claim runs (it may wait for a group). */
  claim(limit: () => number): Promise<OperationRow[]>;
  /** Rows held besides the buffer (the sends in flight): with it, the buffer stays under `cap`. */
  heldElsewhere(): number;
  /** Rows this dispatcher may hold at once, in flight and buffered. */
  cap: number;
  /** How long a buffered row may wait and still be sent within its lease, ms. */
  maxWaitMs: number;
  now(): number;
  /** A background claim brought rows: the loop may send them. */
  wake(): void;
  /** A background claim failed (the loop's own claim reports store failures). */
  failed(err: unknown): void;
}

/** A buffered row and when its lease began (the claim's time). */
interface Held {
  row: OperationRow;
  leasedAt: number;
}

/**
 * How long a claimed row may wait before its send starts: the lease less what one send may take
 * (the lower bound configSchema's `timingProblems` puts on `outbox.lease_seconds`), so a row sent
 * from the buffer is still leased when its answer comes. Zero or less: claim nothing ahead.
 */
export function aheadWaitMs(c: {
  operator: { timeout_ms: number; rate_per_second: number };
  outbox: { lease_seconds: number; concurrency: number };
}): number {
  const send =
    2 * c.operator.timeout_ms + Math.ceil((c.outbox.concurrency / c.operator.rate_per_second) * 1000);
  return c.outbox.lease_seconds * 1000 - send;
}

/** Of the buffered rows, those still sendable at `now` and those whose lease ran too short. */
export function splitStale(held: readonly Held[], now: number, maxWaitMs: number): [Held[], Held[]] {
  const fresh: Held[] = [];
  const stale: Held[] = [];
  for (const h of held) (now - h.leasedAt <= maxWaitMs ? fresh : stale).push(h);
  return [fresh, stale];
}

export class ClaimAhead {
  private buffer: Held[] = [];
  /** A claim submitted whose group has not started: the next settles' group takes it. */
  private waiting: Promise<void> | null = null;
  /** Callers waiting for rows in the buffer, or for no claim to be left that could bring some. */
  private arrivals: Array<() => void> = [];
  /** Rows asked for by claims that started and have not answered. */
  private asked = 0;
  /** Claims submitted and not answered (the waiting one too). */
  private readonly pending = new Set<Promise<void>>();

  constructor(private readonly deps: ClaimAheadDeps) {}

  /** Rows buffered now. */
  get size(): number {
    return this.buffer.length;
  }

  /**
   * Up to `n` rows to send now, from the buffer; when it is empty, waits for a claim (the one
   * waiting or running, else one of its own: its failure is the caller's). Also returns the
   * buffered rows whose lease ran too short to send, to hand back. The caller calls
   * {@link topUp} once the rows it took are counted in `heldElsewhere`.
   */
  async take(n: number): Promise<{ rows: OperationRow[]; stale: OperationRow[] }> {
    if (this.buffer.length === 0) {
      if (this.pending.size > 0) await this.rowsOrNoClaim();
      else await this.claim(true);
    }
    const [fresh, stale] = splitStale(this.buffer, this.deps.now(), this.deps.maxWaitMs);
    const rows = fresh.slice(0, Math.max(0, n));
    this.buffer = fresh.slice(rows.length);
    // No top-up here: the rows taken are counted nowhere until the caller tracks their sends
    // (heldElsewhere), and a claim whose group starts before that would take room they still use.
    // The caller tops up once they are tracked, and only while rows move.
    return { rows: rows.map((h) => h.row), stale: stale.map((h) => h.row) };
  }

  /** Keeps one claim waiting for the store's next group while the buffer has room. */
  topUp(): void {
    if (this.waiting || this.room() <= 0) return;
    void this.claim(false);
  }

  /** Hands every buffered row out (to release); claims still running add theirs later (see {@link settled}). */
  drain(): OperationRow[] {
    const rows = this.buffer.map((h) => h.row);
    this.buffer = [];
    return rows;
  }

  /** Resolves once no claim is waiting or running. */
  async settled(): Promise<void> {
    while (this.waiting || this.pending.size > 0) await Promise.allSettled([this.waiting, ...this.pending]);
  }

  /**
   * Resolves once a claim ends with rows buffered, or with no claim left: not merely when the claim
   * waited on answers (it may wait for a group while another claim's rows have come in meanwhile).
   */
  private rowsOrNoClaim(): Promise<void> {
    return new Promise((resolve) => this.arrivals.push(resolve));
  }

  /** Wakes every take() waiting in {@link rowsOrNoClaim}. */
  private arrived(): void {
    const waiting = this.arrivals;
    this.arrivals = [];
    for (const resolve of waiting) resolve();
  }

  private room(): number {
    return this.deps.cap - this.buffer.length - this.deps.heldElsewhere() - this.asked;
  }

  /** One claim; rows go to the buffer. A background one's failure is reported, not thrown. */
  private claim(awaited: boolean): Promise<void> {
    let leasedAt = 0;
    let asked = 0;
    let started = false;
    const limit = () => {
      started = true;
      this.waiting = null;
      leasedAt = this.deps.now();
      asked = Math.max(0, this.room());
      this.asked += asked;
      return asked;
    };
    const task: Promise<void> = this.deps
      .claim(limit)
      .then(
        (rows) => {
          for (const row of rows) this.buffer.push({ row, leasedAt });
          if (rows.length > 0 && !awaited) this.deps.wake();
        },
        (err: unknown) => {
          if (awaited) throw err;
          this.deps.failed(err);
        },
      )
      .finally(() => {
        if (this.waiting === tracked) this.waiting = null;
        this.asked -= asked;
        this.pending.delete(tracked);
        // What take() waits for: rows to take, or no claim left that could bring any.
        if (this.buffer.length > 0 || this.pending.size === 0) this.arrived();
      });
    // What the sets hold: settled either way (a failure is the awaiting caller's, or reported).
    const tracked = task.catch(() => {});
    this.pending.add(tracked);
    if (!started) this.waiting = tracked;
    return task;
  }
}

/**
 * Rows a dispatcher claims ahead of its free slots, as the stores set it: three times its slots, so
 * an answered slot takes its next row at once while claims wait for a group. On PostgreSQL each
 * claim is a round trip to the server; on SQLite a busy dispatcher's groups start only every few
 * milliseconds (sqlite/dispatcherBatches.ts DISPATCHER_GROUP_SPACING_MS).
 */
export const claimAheadRows = (config: { outbox: { concurrency: number } }): number =>
  3 * config.outbox.concurrency;

/**
 * The buffer for `extra` rows beyond `outbox.concurrency`, or null when none is asked for or the
 * lease leaves a claimed row no time to wait ({@link aheadWaitMs}).
 */
export function claimAheadFor(
  config: Parameters<typeof aheadWaitMs>[0],
  extra: number,
  deps: Omit<ClaimAheadDeps, 'cap' | 'maxWaitMs'>,
): ClaimAhead | null {
  const maxWaitMs = aheadWaitMs(config);
  if (extra <= 0 || maxWaitMs <= 0) return null;
  return new ClaimAhead({ ...deps, cap: config.outbox.concurrency + extra, maxWaitMs });
}
