/**
 * What one record may be: its size and nesting depth, counted on the decompressed bytes. A record
 * past a limit is never parsed (a 100,000-deep record overflows the stack of every recursive step
 * after JSON.parse; a 400 MB one exhausts memory): it becomes an {@link UnreadableRecord}, which the
 * writer quarantines with the reason while the run goes on.
 */

/** Limits on one record, in decompressed bytes and nesting levels. */
export interface RecordLimits {
  /** Largest record, bytes (a Marketplace Data answer, or one element of a list). */
  readonly maxRecordBytes: number;
  /** Deepest nesting of objects and arrays inside one record (the record itself is level 1). */
  readonly maxDepth: number;
}

/** No limits: what the splitter does when nobody asks for any. */
export const NO_LIMITS: RecordLimits = { maxRecordBytes: Infinity, maxDepth: Infinity };

/** How much of an unreadable record is kept, so the quarantine row shows what it looked like. */
export const EXCERPT_BYTES = 1024;

/** A record the operator sent that was not read whole: too large or nested too deep. */
export class UnreadableRecord {
  constructor(
    /** Why, naming the limit and its key. */
    readonly reason: string,
    /** The record's first bytes as text (at most {@link EXCERPT_BYTES}). */
    readonly excerpt: string,
    /** The record's key when the caller knows it (a Marketplace Data read by id). */
    readonly key: string | null = null,
  ) {}

  /** The same record, its key known. */
  withKey(key: string): UnreadableRecord {
    return new UnreadableRecord(this.reason, this.excerpt, key);
  }

  /**
   * The key: the known one, else the first `"field": value` of the excerpt (best effort: the
   * record was never parsed). A quarantined record with a key is kept out of tombstoning.
   */
  keyOf(field: string): string | null {
    if (this.key !== null) return this.key;
    const name = field.replace(/[^A-Za-z0-9_]/g, '');
    if (name !== field) return null;
    const m = new RegExp(`"${name}"\\s*:\\s*(?:"((?:[^"\\\\]|\\\\.){1,200})"|(-?\\d{1,30}))`).exec(
      this.excerpt,
    );
    return m ? (m[1] ?? m[2] ?? null) : null;
  }

  /** What the quarantine row stores as the record's text. */
  get raw(): string {
    return `${this.excerpt}…[not read: ${this.reason}]`;
  }
}

export function tooLarge(limit: number): string {
  return `record larger than operator.max_record_bytes (${limit} bytes)`;
}

export function tooDeep(limit: number): string {
  return `record nested deeper than operator.max_depth (${limit} levels)`;
}

/** The first bytes of `pieces` as text, for an excerpt. */
export function excerptOf(pieces: readonly Buffer[]): string {
  const out: Buffer[] = [];
  let n = 0;
  for (const piece of pieces) {
    if (n >= EXCERPT_BYTES) break;
    const part = piece.subarray(0, EXCERPT_BYTES - n);
    out.push(part);
    n += part.length;
  }
  return Buffer.concat(out, n).toString('utf8');
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;

/**
 * Where the JSON string being read from `from` (just past its opening quote, or anywhere inside it)
 * ends: the index of its closing quote; or, when `buf` ends first, `buf.length`, or `buf.length + 1`
 * when its last byte is a backslash (the next buffer's first byte is escaped). A plain byte loop:
 * strings in records are short, and one native `indexOf` per quote, plus a walk back over
 * backslashes, cost twice as much per page (docs/benchmarks.md, "Issue 30, third round").
 */
export function stringEnd(buf: Uint8Array, from: number): number {
  const n = buf.length;
  let i = from;
  for (; i < n; i++) {
    const c = buf[i];
    if (c === QUOTE) return i;
    if (c === BACKSLASH) i++;
  }
  return i;
}

/**
 * Scans JSON text for a record past the limits, without recursion and without parsing (strings are
 * skipped). `level` 0: the text is one record; 1: it is an array whose elements are the records.
 * Returns the reason for the first record past a limit, or null. Only the structure is looked at:
 * JSON.parse still judges the syntax. `spans` (level 1) gets the start and end offset of every
 * element that is an object or array, found by the same walk.
 */
export function overLimits(buf: Buffer, level: 0 | 1, limits: RecordLimits, spans?: number[]): string | null {
  if (limits.maxDepth === Infinity && limits.maxRecordBytes === Infinity) return null;
  if (level === 0 && buf.length > limits.maxRecordBytes) return tooLarge(limits.maxRecordBytes);
  const deepest = limits.maxDepth + level;
  let depth = 0;
  let elementStart = 0;
  let spanStart = 0;
  const n = buf.length;
  for (let i = 0; i < n; i++) {
    const b = buf[i]!;
    if (b === QUOTE) {
      i = stringEnd(buf, i + 1);
    } else if (b === 0x7b || b === 0x5b) {
      if (++depth > deepest) return tooDeep(limits.maxDepth);
      if (depth === 2 && level === 1) spanStart = i;
    } else if (b === 0x7d || b === 0x5d) {
      depth--;
      if (depth === 1 && level === 1) spans?.push(spanStart, i + 1);
      // The element's bytes lie between the separators at `elementStart` and `i`.
      if (level === 1 && depth === 0 && i - elementStart - 1 > limits.maxRecordBytes)
        return tooLarge(limits.maxRecordBytes);
    } else if (b === COMMA && level === 1 && depth === 1) {
      if (i - elementStart - 1 > limits.maxRecordBytes) return tooLarge(limits.maxRecordBytes);
      elementStart = i;
    }
  }
  return null;
}
