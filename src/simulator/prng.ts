/**
 * Deterministic, allocation-light randomness for the simulator.
 *
 * Every generated record is a pure function of (seed, resource, index): we hash those into a
 * 32-bit state and draw from a small PRNG (mulberry32). No global state, so record i can be
 * produced on demand in any order, which is what lets the registry hold 1,000,000+ unit
 * operations without building them.
 */

/** 32-bit integer hash (a murmur3 finaliser): spreads nearby inputs over the whole range. */
export function mix32(x: number): number {
  let h = x | 0;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/**
 * Combines three integers (seed, resource salt, index) into one well-mixed 32-bit state. Fixed
 * arity on purpose: it runs once per generated record. Indices above 2^32 fold their high part in.
 */
export function hash3(a: number, b: number, c: number): number {
  let h = 0x9e3779b9;
  h = mix32(h ^ mix32(a >>> 0) ^ Math.imul(Math.floor(a / 0x1_0000_0000), 0x27d4eb2d));
  h = mix32(h ^ mix32(b >>> 0) ^ Math.imul(Math.floor(b / 0x1_0000_0000), 0x27d4eb2d));
  h = mix32(h ^ mix32(c >>> 0) ^ Math.imul(Math.floor(c / 0x1_0000_0000), 0x27d4eb2d));
  return h;
}

/** A tiny sequential generator (mulberry32) for drawing several values from one state. */
export class Rng {
  private state: number;

  constructor(seed: number) {
    this.state = seed >>> 0;
  }

  /** Uniform float in [0, 1). */
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /** Integer in [min, max] inclusive. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }

  /** One element of a non-empty list. */
  pick<T>(list: readonly T[]): T {
    const v = list[Math.floor(this.next() * list.length)];
    if (v === undefined) throw new Error('pick from an empty list');
    return v;
  }

  /** True with probability p. */
  chance(p: number): boolean {
    return this.next() < p;
  }
}
