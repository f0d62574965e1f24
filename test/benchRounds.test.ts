import { describe, expect, it } from 'vitest';
import { alternateRounds, roundsFor, summarizeRates } from './bench/lib/rounds.js';

describe("the bench's side-by-side rounds", () => {
  it('times the baseline first in odd rounds and last in even ones, pairing each round', async () => {
    const order: string[] = [];
    const done = await alternateRounds(
      4,
      async (round) => {
        order.push(`base ${round}`);
        return `b${round}`;
      },
      async (round) => {
        order.push(`ours ${round}`);
        return `o${round}`;
      },
    );
    expect(order).toEqual(['base 1', 'ours 1', 'ours 2', 'base 2', 'base 3', 'ours 3', 'ours 4', 'base 4']);
    expect(done).toEqual([1, 2, 3, 4].map((r) => ({ baseline: `b${r}`, ours: `o${r}` })));
  });

  it("gives the median of the rounds' own ratios, not the ratio of the medians, and every round's", () => {
    const summary = summarizeRates([
      { value: 3943, baseline: 6603 },
      { value: 4210, baseline: 8188 },
      { value: 4662, baseline: 7794 },
    ]);
    expect(summary.value).toBe(4210);
    expect(summary.baseline).toBe(7794);
    // 0.597, 0.514, 0.598: the median round, where 4210 / 7794 would say 0.540.
    expect(summary.ratio).toBeCloseTo(3943 / 6603, 10);
    expect(summary.ratios).toHaveLength(3);
    expect(summary.spread).toBe(
      'each round, ratio (vcu-sync / baseline): 0.60x (3943 / 6603), 0.51x (4210 / 8188), 0.60x (4662 / 7794)',
    );
  });

  it('takes one round in a quick run and several in a full one', () => {
    expect(roundsFor(true)).toBe(1);
    expect(roundsFor(false)).toBeGreaterThanOrEqual(3);
  });
});
