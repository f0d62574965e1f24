import { median } from './timing.js';

/**
 * Side-by-side rounds for the rows whose figure is a rate against a baseline taken in the same run.
 * On a shared host one pair of runs moved by 0.15x from one run to the next (the SQLite outbox
 * drain gave 0.73x, 0.81x and 0.75x in three runs of the same code), so such a row is the median
 * of several rounds, each timing both sides one right after the other, in alternating order (so
 * neither side is always the one that meets the host's next change of load), with every round's
 * ratio in its notes.
 */

/** Rounds per row in a full run; a quick run (the harness test) takes one. */
export const FULL_ROUNDS = 3;

/** The rounds a run takes. */
export const roundsFor = (quick: boolean): number => (quick ? 1 : FULL_ROUNDS);

/** One round: vcu-sync's rate and the baseline's, taken one after the other. */
export interface RatePair {
  value: number;
  baseline: number;
}

/** What rounds give: each side's median, the median of the rounds' ratios, and every ratio. */
export interface RatesSummary {
  value: number;
  baseline: number;
  ratio: number;
  ratios: number[];
  /** "each round, ratio (vcu-sync / baseline): 0.81x (3580 / 4420), ...", for a row's notes. */
  spread: string;
}

/**
 * Round `round`'s two sides, one right after the other: the baseline first in odd rounds, last in
 * even ones. `round` is 1-based.
 */
export async function inRoundOrder<B, O>(
  round: number,
  baseline: () => Promise<B>,
  ours: () => Promise<O>,
): Promise<{ baseline: B; ours: O }> {
  if (round % 2 === 1) {
    const b = await baseline();
    return { baseline: b, ours: await ours() };
  }
  const o = await ours();
  return { baseline: await baseline(), ours: o };
}

/** Runs `rounds` rounds of two sides that need nothing shared ({@link inRoundOrder}). */
export async function alternateRounds<B, O>(
  rounds: number,
  baseline: (round: number) => Promise<B>,
  ours: (round: number) => Promise<O>,
): Promise<Array<{ baseline: B; ours: O }>> {
  const done: Array<{ baseline: B; ours: O }> = [];
  for (let round = 1; round <= rounds; round++)
    done.push(
      await inRoundOrder(
        round,
        () => baseline(round),
        () => ours(round),
      ),
    );
  return done;
}

/** Medians of rate pairs (higher is better on both sides; pure). */
export function summarizeRates(pairs: readonly RatePair[]): RatesSummary {
  const ratios = pairs.map((p) => p.value / p.baseline);
  return {
    value: median(pairs.map((p) => p.value)),
    baseline: median(pairs.map((p) => p.baseline)),
    ratio: median(ratios),
    ratios,
    spread: `each round, ratio (vcu-sync / baseline): ${pairs
      .map((p, i) => `${ratios[i]!.toFixed(2)}x (${p.value.toFixed(0)} / ${p.baseline.toFixed(0)})`)
      .join(', ')}`,
  };
}
