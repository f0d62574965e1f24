/**
 * One resource's live, ordered record sequence, as a lazily generated base plus an overlay.
 *
 * Base record i (0 <= i < baseCount) is generated on demand; the overlay holds only mutations:
 * replaced records (by key), removed base indices, and extra records whose keys are not on a live
 * base slot (admin inserts, drift inserts, appends past a foreign key). Memory is proportional to
 * the number of mutations, never to the number of records, so 1,000,000+ records cost nothing
 * until they are served.
 *
 * The live sequence is ordered by numeric key. Offsets index into it, so removing a record shifts
 * every later offset down by one and inserting shifts them up, exactly like an upstream that pages
 * with LIMIT/OFFSET over a changing table.
 */
import type { KeySpec } from './generate.js';
import type { JsonObject } from './types.js';

/** Index of the first element of sorted `arr` that is >= x. */
function lowerBound(arr: readonly number[], x: number): number {
  let lo = 0;
  let hi = arr.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if ((arr[mid] as number) < x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

export interface Entry {
  key: number;
  record: JsonObject;
}

export class OverlaySequence {
  private baseCount: number;
  private readonly removedBase: number[] = [];
  private readonly removedSet = new Set<number>();
  private readonly changed = new Map<number, JsonObject>();
  private readonly extraKeys: number[] = [];
  private readonly extras = new Map<number, JsonObject>();

  constructor(
    private readonly spec: KeySpec,
    private readonly gen: (i: number) => JsonObject,
    baseCount: number,
  ) {
    this.baseCount = baseCount;
  }

  get size(): number {
    return this.baseCount - this.removedBase.length + this.extraKeys.length;
  }

  /** Number of base slots (generated records), including removed ones. */
  get baseSize(): number {
    return this.baseCount;
  }

  private liveBaseIndex(key: number): number | undefined {
    const i = this.spec.baseIndex(key);
    return i !== undefined && i < this.baseCount && !this.removedSet.has(i) ? i : undefined;
  }

  has(key: number): boolean {
    return this.liveBaseIndex(key) !== undefined || this.extras.has(key);
  }

  get(key: number): JsonObject | undefined {
    const extra = this.extras.get(key);
    if (extra) return extra;
    const i = this.liveBaseIndex(key);
    if (i === undefined) return undefined;
    return this.changed.get(key) ?? this.gen(i);
  }

  /** Largest live key, or undefined when empty. */
  maxKey(): number | undefined {
    const lastExtra = this.extraKeys[this.extraKeys.length - 1];
    const liveBase = this.baseCount - this.removedBase.length;
    const lastBase = liveBase > 0 ? this.spec.baseKey(this.kthLiveBase(liveBase - 1)) : undefined;
    if (lastExtra === undefined) return lastBase;
    return lastBase === undefined ? lastExtra : Math.max(lastExtra, lastBase);
  }

  /** Adds a record under a key not live yet. A removed base slot is revived with the new content. */
  add(key: number, record: JsonObject): boolean {
    if (this.has(key)) return false;
    const i = this.spec.baseIndex(key);
    if (i !== undefined && i < this.baseCount) {
      this.removedSet.delete(i);
      this.removedBase.splice(lowerBound(this.removedBase, i), 1);
      this.changed.set(key, record);
      return true;
    }
    this.extraKeys.splice(lowerBound(this.extraKeys, key), 0, key);
    this.extras.set(key, record);
    return true;
  }

  /** Replaces a live record's content; false when no live record has this key. */
  replace(key: number, record: JsonObject): boolean {
    if (this.extras.has(key)) {
      this.extras.set(key, record);
      return true;
    }
    if (this.liveBaseIndex(key) === undefined) return false;
    this.changed.set(key, record);
    return true;
  }

  remove(key: number): boolean {
    if (this.extras.delete(key)) {
      this.extraKeys.splice(lowerBound(this.extraKeys, key), 1);
      return true;
    }
    const i = this.liveBaseIndex(key);
    if (i === undefined) return false;
    this.removedSet.add(i);
    this.removedBase.splice(lowerBound(this.removedBase, i), 0, i);
    this.changed.delete(key);
    return true;
  }

  /**
   * Grows the generated base by n records (cheap appends for the unit log). Refused when an
   * extra record already sits at or past the next base key, since that would break key order.
   */
  growBase(n: number): boolean {
    const last = this.extraKeys[this.extraKeys.length - 1];
    if (last !== undefined && last >= this.spec.baseKey(this.baseCount)) return false;
    this.baseCount += n;
    return true;
  }

  /** Live base records with key < k. */
  private liveBaseBelow(k: number): number {
    const first = this.spec.baseKey(0);
    const step = this.spec.baseKey(1) - first;
    const b = Math.min(this.baseCount, Math.max(0, Math.ceil((k - first) / step)));
    return b - lowerBound(this.removedBase, b);
  }

  /** Base index of the k-th (0-based) live base record. */
  private kthLiveBase(k: number): number {
    // removedBase[j] - j is non-decreasing, so count the removed slots at or before the answer.
    let lo = 0;
    let hi = this.removedBase.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if ((this.removedBase[mid] as number) - mid <= k) lo = mid + 1;
      else hi = mid;
    }
    return k + lo;
  }

  /** Where position p lands: the next base index and next extra index to merge from. */
  private cursorAt(p: number): { baseIdx: number; extraIdx: number } {
    let lo = 0;
    let hi = this.extraKeys.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const pos = this.liveBaseBelow(this.extraKeys[mid] as number) + mid;
      if (pos < p) lo = mid + 1;
      else hi = mid;
    }
    // `lo` extras precede position p; the live base records before p number p - lo.
    return { baseIdx: this.kthLiveBase(p - lo), extraIdx: lo };
  }

  /** Live entries from position `from` on, in key order. Reads the overlay as it goes. */
  *entries(from = 0): Generator<Entry> {
    if (from >= this.size) return;
    let { baseIdx, extraIdx } = this.cursorAt(Math.max(0, from));
    for (;;) {
      while (baseIdx < this.baseCount && this.removedSet.has(baseIdx)) baseIdx++;
      const extraKey = this.extraKeys[extraIdx];
      const baseKey = baseIdx < this.baseCount ? this.spec.baseKey(baseIdx) : undefined;
      if (baseKey === undefined && extraKey === undefined) return;
      if (extraKey !== undefined && (baseKey === undefined || extraKey < baseKey)) {
        extraIdx++;
        const record = this.extras.get(extraKey);
        if (record) yield { key: extraKey, record };
      } else if (baseKey !== undefined) {
        const i = baseIdx++;
        yield { key: baseKey, record: this.changed.get(baseKey) ?? this.gen(i) };
      }
    }
  }

  /** Key of the record at position p, or undefined past the end. */
  keyAt(p: number): number | undefined {
    if (p < 0) return undefined;
    for (const e of this.entries(p)) return e.key;
    return undefined;
  }

  /**
   * A key that is not live and sorts just before position p (so inserting it shifts p and every
   * later offset up by one), or undefined when the neighbours leave no gap.
   */
  freeKeyBefore(p: number): number | undefined {
    const hi = this.keyAt(p) ?? (this.maxKey() ?? this.spec.baseKey(0)) + 2;
    const lo = p > 0 ? (this.keyAt(p - 1) ?? -1) : -1;
    for (let k = hi - 1; k > lo && k > hi - 64; k--) if (!this.has(k)) return k;
    return undefined;
  }
}
