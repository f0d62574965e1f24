import type { PassOutcome } from './pass.js';

/**
 * What the daemon's reconciler owes next, decided without I/O: the issuances touched since the
 * last pass, when each time-bound condition falls due, and when the next full pass is. The
 * reconciler (reconciler.ts) feeds it what it read and what each pass returned, and asks it what
 * to run and until when it may sleep. Time is always passed in (the context's clock).
 */

/** Touched issuances beyond which one full pass is cheaper than a scoped one (IN lists of GROUP each). */
export const FULL_PASS_ABOVE = 5_000;

/**
 * Most issuances one scoped pass looks at; the rest wait for the next, right after. A pass reads
 * its scope in one go (on SQLite, on the thread that answers the API): small passes keep each
 * read short.
 */
export const SCOPE_MOST = 100;

/** What to run now. */
export type PassPlan = { kind: 'full' } | { kind: 'scoped'; scope: string[] } | { kind: 'none' };

export class ReconcileAgenda {
  /** Issuances to look at in the next scoped pass. */
  private readonly touched = new Set<string>();
  /** The earliest time a condition may turn, by issuance ('' for one only a full pass sees), ms. */
  private due = new Map<string, number>();
  /** A full pass is owed (at start, when due, when too much was touched). */
  private fullOwed = true;
  /** When the next scheduled full pass is owed, ms (after the first). */
  private nextFullAt = Number.POSITIVE_INFINITY;

  constructor(private readonly fullEveryMs: number) {}

  /** Issuances touched (by the feed, or by operations the ledger read). */
  touch(ids: Iterable<string>): void {
    if (this.fullOwed) return;
    for (const id of ids) this.touched.add(id);
    if (this.touched.size > FULL_PASS_ABOVE) this.owesFull();
  }

  /** A full pass is owed now (whatever was touched is in it). */
  owesFull(): void {
    this.fullOwed = true;
    this.touched.clear();
  }

  get wantsFull(): boolean {
    return this.fullOwed;
  }

  /** Whether there is work without waiting (touched ids, a full pass). */
  get pending(): boolean {
    return this.fullOwed || this.touched.size > 0;
  }

  /** Moves what fell due by `now` into the work: a due issuance is touched, a due full pass owed. */
  takeDue(now: number): void {
    if (now >= this.nextFullAt) this.owesFull();
    for (const [id, at] of [...this.due]) {
      if (at > now) continue;
      this.due.delete(id);
      if (id === '') this.owesFull();
      else this.touch([id]);
    }
  }

  /** The pass to run now. */
  plan(): PassPlan {
    if (this.fullOwed) return { kind: 'full' };
    if (this.touched.size > 0)
      return { kind: 'scoped', scope: [...this.touched].sort().slice(0, SCOPE_MOST) };
    return { kind: 'none' };
  }

  /** A full pass that started at `startedAt` went through: it saw everything, and set every due time. */
  fullDone(outcome: Pick<PassOutcome, 'dueAt'>, startedAt: number): void {
    this.fullOwed = false;
    this.touched.clear();
    this.due = new Map(outcome.dueAt);
    this.nextFullAt = startedAt + this.fullEveryMs;
  }

  /**
   * A scoped pass over `scope` went through: those issuances are done and their due times are the
   * pass's; issuances the ledger read outside the scope are touched for the next.
   */
  scopedDone(scope: readonly string[], outcome: Pick<PassOutcome, 'dueAt' | 'ledgered'>): void {
    for (const id of scope) {
      this.touched.delete(id);
      this.due.delete(id);
    }
    for (const [id, at] of outcome.dueAt) this.dueAt(id, at);
    const inScope = new Set(scope);
    this.touch([...outcome.ledgered].filter((id) => !inScope.has(id)));
  }

  /** Keeps the earliest due time of `id`. */
  private dueAt(id: string, at: number): void {
    const was = this.due.get(id);
    if (was === undefined || at < was) this.due.set(id, at);
  }

  /** When the next time-bound work falls due (a condition, the scheduled full pass), ms; null: none. */
  nextAt(): number | null {
    let next = this.nextFullAt;
    for (const at of this.due.values()) if (at < next) next = at;
    return Number.isFinite(next) ? next : null;
  }
}
