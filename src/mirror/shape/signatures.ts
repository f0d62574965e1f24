import { MAX_FIELDS, typeCode } from './shapeTypes.js';

/** Distinct signatures kept; past this the cache starts again (a pathological upstream). */
const MAX_SIGNATURES = 10_000;

/**
 * Records by signature: a record's field names (as small indexes) and their JSON types hashed into
 * two 32-bit FNV-style hashes, no string built, so what a signature means is worked out once per
 * distinct signature, not per record (learner.ts). Two hashes make a collision (a record taken
 * for another shape) vanishingly unlikely.
 */
export class SignatureCache<S extends { h2: number }> {
  private readonly index = new Map<string, number>();
  private readonly lastNames: string[] = [];
  private readonly lastIndex: number[] = [];
  private readonly byHash = new Map<number, S[]>();
  private size = 0;
  /** The hashes of the record last {@link hash}ed. */
  h1 = 0;
  h2 = 0;

  /** Hashes `value`'s names and types (then {@link find} or {@link add}). */
  hash(value: object): void {
    let h1 = 0x811c9dc5;
    let h2 = 0x9747b28c;
    let n = 0;
    const { lastNames, lastIndex } = this;
    for (const name in value) {
      // Records of one list come with their keys in one order: the previous record's names spare
      // the map lookups (property names are internalized, so this compares pointers).
      let i: number;
      if (lastNames[n] === name) i = lastIndex[n]!;
      else {
        i = this.fieldIndex(name);
        lastNames[n] = name;
        lastIndex[n] = i;
      }
      const x = i * 8 + typeCode((value as Record<string, unknown>)[name]);
      h1 = Math.imul(h1 ^ x, 16777619);
      h2 = Math.imul(h2 ^ (x + n), 2246822519) ^ (h2 >>> 15);
      n++;
    }
    this.h1 = h1;
    this.h2 = (h2 ^ n) >>> 0;
  }

  /** The signature of the record last hashed, if known. */
  find(): S | undefined {
    const { h2 } = this;
    return this.byHash.get(this.h1)?.find((s) => s.h2 === h2);
  }

  /** Keeps a signature under the hashes of the record last hashed. */
  add(sig: S): void {
    if (this.size >= MAX_SIGNATURES) {
      this.byHash.clear();
      this.size = 0;
    }
    const list = this.byHash.get(this.h1);
    if (list) list.push(sig);
    else this.byHash.set(this.h1, [sig]);
    this.size++;
  }

  *all(): Generator<S> {
    for (const list of this.byHash.values()) yield* list;
  }

  private fieldIndex(name: string): number {
    let i = this.index.get(name);
    if (i === undefined) {
      i = this.index.size < MAX_FIELDS ? this.index.size : MAX_FIELDS;
      if (i < MAX_FIELDS) this.index.set(name, i);
    }
    return i;
  }
}
