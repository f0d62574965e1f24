import { Readable } from 'node:stream';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { overLimits, type RecordLimits, UnreadableRecord } from '../../src/operator/limits.js';
import { readListBody } from '../../src/operator/listBody.js';
import { JsonArraySplitter, NotAJsonArray } from '../../src/operator/splitJsonArray.js';

/**
 * Splits `text` at the given cut points and returns the parsed elements (an element past the
 * limits comes back as the UnreadableRecord the splitter gave).
 */
function splitAt(text: string, cuts: number[], limits?: RecordLimits): unknown[] {
  const bytes = Buffer.from(text, 'utf8');
  const points = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
  const splitter = new JsonArraySplitter(limits);
  const out: unknown[] = [];
  let from = 0;
  for (const to of [...points, bytes.length]) {
    for (const t of splitter.push(bytes.subarray(from, to)))
      out.push(typeof t === 'string' ? JSON.parse(t) : t);
    from = to;
  }
  splitter.end();
  return out;
}

describe('JsonArraySplitter', () => {
  it('yields every element of any JSON array, however the bytes are chunked', () => {
    fc.assert(
      fc.property(
        fc.array(fc.jsonValue(), { maxLength: 8 }),
        fc.constantFrom(undefined, 1, '\t'),
        fc.array(fc.nat(), { maxLength: 12 }),
        (array, indent, cuts) => {
          const text = JSON.stringify(array, null, indent);
          expect(splitAt(text, cuts)).toEqual(JSON.parse(text));
        },
      ),
      { numRuns: 500 },
    );
  });

  it('handles escaped quotes and backslashes split across chunks', () => {
    const array = [{ a: 'say \\"hi\\" \\\\', b: ['x"]', '\\'] }, 'str\\"ing', 12.5e3, true, null];
    const text = JSON.stringify(array);
    for (let cut = 0; cut <= text.length; cut++) expect(splitAt(text, [cut, cut + 3])).toEqual(array);
    // One byte at a time, an empty chunk after each: an escape pending at a chunk's end survives one.
    const splitter = new JsonArraySplitter();
    const bytes = Buffer.from(text, 'utf8');
    const texts: string[] = [];
    for (let i = 0; i < bytes.length; i++)
      for (const piece of [bytes.subarray(i, i + 1), bytes.subarray(0, 0)])
        for (const t of splitter.push(piece)) texts.push(t as string);
    splitter.end();
    expect(texts.map((t) => JSON.parse(t))).toEqual(array);
  });

  it('never accepts what JSON.parse rejects as an array', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string(),
          fc.json().map((j) => `[${j}`),
          fc.json().map((j) => `${j}]`),
        ),
        fc.array(fc.nat(), { maxLength: 6 }),
        (text, cuts) => {
          let whole: unknown;
          try {
            whole = JSON.parse(text);
          } catch {
            whole = undefined;
          }
          let split: unknown[] | undefined;
          try {
            split = splitAt(text, cuts);
          } catch {
            split = undefined;
          }
          if (split !== undefined) expect(split).toEqual(whole);
          if (Array.isArray(whole)) expect(split).toEqual(whole);
        },
      ),
      { numRuns: 1000 },
    );
  });

  it('names what it found instead of an array', () => {
    expect(() => new JsonArraySplitter().push(Buffer.from('<html>'))).toThrow(
      /expected a JSON array at byte 0, found an HTML page/,
    );
    const cut = new JsonArraySplitter();
    cut.push(Buffer.from('[{"a":1},{"b"'));
    expect(() => cut.end()).toThrow(NotAJsonArray);
    expect(() => new JsonArraySplitter().push(Buffer.from('[1 2]'))).toThrow(/expected a comma or \]/);
    expect(() => new JsonArraySplitter().push(Buffer.from('[1] x'))).toThrow(/nothing after the array/);
    expect(() => new JsonArraySplitter().push(Buffer.from('[1,]'))).toThrow(/a value after the comma/);
    expect(() => new JsonArraySplitter().push(Buffer.from('[{"a":1}, ]'))).toThrow(/a value after the comma/);
    expect(() => new JsonArraySplitter().push(Buffer.from('[,1]'))).toThrow(/expected a value/);
    expect(splitAt('[ ]', [])).toEqual([]);
  });

  it('sets aside each element past the size or depth limit, whatever the chunking, and keeps the rest', () => {
    fc.assert(
      fc.property(
        fc.array(fc.jsonValue({ maxDepth: 6 }), { maxLength: 8 }),
        fc.integer({ min: 1, max: 60 }),
        fc.integer({ min: 0, max: 5 }),
        fc.array(fc.nat(), { maxLength: 12 }),
        (array, maxRecordBytes, maxDepth, cuts) => {
          const limits = { maxRecordBytes, maxDepth };
          const text = JSON.stringify(array);
          const split = splitAt(text, cuts, limits);
          expect(split).toHaveLength(array.length);
          let anyOver = false;
          array.forEach((element, i) => {
            const size = Buffer.byteLength(JSON.stringify(element));
            const tooDeep = depthOf(element) > maxDepth;
            const got = split[i];
            if (size > maxRecordBytes || tooDeep) {
              anyOver = true;
              expect(got).toBeInstanceOf(UnreadableRecord);
              expect((got as UnreadableRecord).reason).toMatch(
                size > maxRecordBytes ? /operator\.max_record_bytes/ : /operator\.max_depth/,
              );
            } else {
              expect(got).toEqual(JSON.parse(JSON.stringify(element)));
            }
          });
          // The byte scan of a buffered body agrees with the splitter.
          expect(overLimits(Buffer.from(text), 1, limits) !== null).toBe(anyOver);
        },
      ),
      { numRuns: 500 },
    );
  });

  it('a page parsed whole keeps the bytes each object was sent as, and none when an element is not an object', async () => {
    const limits = { maxRecordBytes: 1024 * 1024, maxDepth: 64 };
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.dictionary(fc.string(), fc.jsonValue()), { maxLength: 6 }),
        fc.constantFrom(undefined, 1, '\t'),
        fc.boolean(),
        async (objects, indent, withScalar) => {
          const array: unknown[] = withScalar ? [...objects, 'x'] : objects;
          const body = await readListBody(
            Readable.from([Buffer.from(JSON.stringify(array, null, indent))]),
            1 << 20,
            limits,
          );
          if (body.kind !== 'array') throw new Error('expected a parsed page');
          if (withScalar) expect(body.wire).toBeUndefined();
          else
            expect(body.wire?.map((w) => JSON.parse(Buffer.from(w).toString('utf8')))).toEqual(body.records);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('keeps memory flat for an element that never closes and one nested 100,000 deep', () => {
    const splitter = new JsonArraySplitter({ maxRecordBytes: 1024 * 1024, maxDepth: 64 });
    splitter.push(Buffer.from('[{"projectID":"7","pad":"'));
    const chunk = Buffer.alloc(64 * 1024, 0x30);
    for (let i = 0; i < 200; i++) expect(splitter.push(chunk)).toEqual([]);
    // 12.5 MiB in, and the splitter holds its excerpt and the last chunk only.
    expect(splitter['carry'].reduce((n: number, b: Buffer) => n + b.length, 0)).toBeLessThanOrEqual(
      64 * 1024,
    );
    const [record] = splitter.push(Buffer.from('"},1]')) as [UnreadableRecord];
    expect(record.reason).toMatch(/larger than operator\.max_record_bytes \(1048576 bytes\)/);
    expect(record.keyOf('projectID')).toBe('7');
    expect(record.raw.length).toBeLessThan(1200);

    const deep = `[${'['.repeat(100_000)}${']'.repeat(100_000)},{"projectID":3}]`;
    const out = splitAt(deep, [5000, 150_000], { maxRecordBytes: 1024 * 1024, maxDepth: 64 });
    expect((out[0] as UnreadableRecord).reason).toMatch(/deeper than operator\.max_depth \(64 levels\)/);
    expect(out[1]).toEqual({ projectID: 3 });
    expect(overLimits(Buffer.from(deep), 1, { maxRecordBytes: 1024 * 1024, maxDepth: 64 })).toMatch(
      /max_depth/,
    );
  });
});

/** Nesting depth of a parsed value (a scalar is 0, `{}` and `[]` are 1). */
function depthOf(value: unknown): number {
  if (value === null || typeof value !== 'object') return 0;
  const children = Array.isArray(value) ? value : Object.values(value);
  return 1 + Math.max(0, ...children.map(depthOf));
}
