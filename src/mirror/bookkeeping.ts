/**
 * A run's counts, as `sync_runs` stores them, and how a batch's tally adds to them. The statements
 * that keep them are in statements.ts.
 */

/** Counters of one run, as `sync_runs` stores them. */
export interface RunCounts {
  fetched: number;
  inserted: number;
  updated: number;
  removed: number;
  unchanged: number;
  quarantined: number;
  pages: number;
}

export function emptyCounts(): RunCounts {
  return { fetched: 0, inserted: 0, updated: 0, removed: 0, unchanged: 0, quarantined: 0, pages: 0 };
}

/** What the writes of one batch did, by outcome (a part of RunCounts). */
export type WriteTally = Pick<RunCounts, 'inserted' | 'updated' | 'unchanged' | 'quarantined' | 'removed'>;

/** `counts` plus `tally` (pure). */
export function withTally(counts: RunCounts, tally: Partial<WriteTally>): RunCounts {
  return {
    ...counts,
    inserted: counts.inserted + (tally.inserted ?? 0),
    updated: counts.updated + (tally.updated ?? 0),
    unchanged: counts.unchanged + (tally.unchanged ?? 0),
    quarantined: counts.quarantined + (tally.quarantined ?? 0),
    removed: counts.removed + (tally.removed ?? 0),
  };
}
