import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { JsonArraySplitter, NotAJsonArray } from '../../src/operator/splitJsonArray.js';

/** Splits `text` at the given cut points and returns the parsed elements. */
function splitAt(text: string, cuts: number[]): unknown[] {
  const bytes = Buffer.from(text, 'utf8');
  const points = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
  const splitter = new JsonArraySplitter();
  const out: unknown[] = [];
  let from = 0;
  for (const to of [...points, bytes.length]) {
    for (const t of splitter.push(bytes.subarray(from, to))) out.push(JSON.parse(t));
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
});
