import type { Readable } from 'node:stream';
import { NO_LIMITS, overLimits, type RecordLimits, type UnreadableRecord } from './limits.js';
import { OperatorError } from './operatorErrors.js';
import { JsonArraySplitter } from './splitJsonArray.js';

/**
 * A list body: parsed at once when it is small (the fast path for ordinary pages), or streamed
 * record by record when it grows past the buffer limit (a list that ignores paging and answers with
 * its whole history), so memory stays flat whatever the size. A record past the limits (size, depth)
 * is an {@link UnreadableRecord} among the others, for the writer to quarantine.
 */
export type ListBody =
  | {
      readonly kind: 'array';
      readonly records: readonly unknown[];
      readonly bytes: number;
      /** Each record's bytes as sent, when every one is an object or array (see {@link wireTexts}). */
      readonly wire?: readonly Uint8Array[] | undefined;
    }
  | {
      readonly kind: 'stream';
      readonly records: AsyncIterable<unknown>;
      /** Bytes of the body split into records so far (what the records read hold, roughly). */
      readonly bytesRead: () => number;
    };

function notAnArray(what: string): OperatorError {
  return new OperatorError('invalid-response', `operator answered ${what} where a JSON array was expected`);
}

function parseArray(text: string): unknown[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    const head = text.trimStart().slice(0, 15).toLowerCase();
    throw notAnArray(head.startsWith('<') ? 'an HTML page' : 'a body that is not valid JSON');
  }
  if (!Array.isArray(parsed)) throw notAnArray(`a JSON ${parsed === null ? 'null' : typeof parsed}`);
  return parsed;
}

function parseElement(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw notAnArray('a body that is not a valid JSON array');
  }
}

const parseOrKeep = (text: string | UnreadableRecord): unknown =>
  typeof text === 'string' ? parseElement(text) : text;

async function* streamRecords(
  buffered: Buffer[],
  rest: AsyncIterator<Buffer>,
  limits: RecordLimits,
  counter: { bytes: number },
): AsyncGenerator<unknown> {
  const splitter = new JsonArraySplitter(limits);
  const split = (chunk: Buffer) => {
    counter.bytes += chunk.length;
    try {
      return splitter.push(chunk);
    } catch (err) {
      throw notAnArray(`a body that is not a valid JSON array (${(err as Error).message})`);
    }
  };
  // Shift, so each buffered chunk can be collected as soon as it is split.
  for (let chunk = buffered.shift(); chunk; chunk = buffered.shift()) {
    for (const text of split(chunk)) yield parseOrKeep(text);
  }
  for (;;) {
    let next: IteratorResult<Buffer>;
    try {
      next = await rest.next();
    } catch (err) {
      throw new OperatorError(
        'transient',
        `operator body broke off while streaming: ${(err as Error).message}`,
      );
    }
    if (next.done) break;
    for (const text of split(next.value)) yield parseOrKeep(text);
  }
  try {
    splitter.end();
  } catch (err) {
    throw notAnArray(`a body that is not a valid JSON array (${(err as Error).message})`);
  }
}

/**
 * Reads a list body from `stream`: up to `bufferLimit` bytes are buffered and parsed in one go;
 * past that the rest is parsed as a stream. A buffered body holding a record past the limits (found
 * by a byte scan, never by parsing) is split like a streamed one, so that record alone is set aside.
 */
export async function readListBody(
  stream: Readable,
  bufferLimit: number,
  limits: RecordLimits = NO_LIMITS,
): Promise<ListBody> {
  const chunks: Buffer[] = [];
  let bytes = 0;
  const iterator = stream[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  const streamed = (buffered: Buffer[]): ListBody => {
    const counter = { bytes: 0 };
    return {
      kind: 'stream',
      records: streamRecords(buffered, iterator, limits, counter),
      bytesRead: () => counter.bytes,
    };
  };
  try {
    for (let next = await iterator.next(); !next.done; next = await iterator.next()) {
      chunks.push(next.value);
      bytes += next.value.length;
      if (bytes > bufferLimit) return streamed(chunks);
    }
  } catch (err) {
    throw new OperatorError('transient', `operator body broke off: ${(err as Error).message}`);
  }
  const body = Buffer.concat(chunks, bytes);
  const spans: number[] = [];
  if (overLimits(body, 1, limits, spans) !== null) return streamed([body]);
  const records = parseArray(body.toString('utf8'));
  return { kind: 'array', records, bytes, wire: wireTexts(body, spans, records.length) };
}

/**
 * The bytes each record of a parsed page was sent as (views of `body`, no copy), from the spans the
 * limits scan found; none unless there is one span per record (an element that is not an object
 * or array has none). The mirror compares their hash with a stored row's before it serializes the
 * record (batchPlan.ts): an unchanged record then costs no JSON.stringify.
 */
function wireTexts(body: Buffer, spans: readonly number[], count: number): Uint8Array[] | undefined {
  if (spans.length !== 2 * count) return undefined;
  const out = new Array<Uint8Array>(count);
  for (let i = 0; i < count; i++) out[i] = body.subarray(spans[2 * i], spans[2 * i + 1]);
  return out;
}

/** A body read up to a limit: the bytes, and whether the operator sent more than that. */
export interface BoundedBody {
  readonly bytes: Buffer;
  readonly truncated: boolean;
}

/**
 * Reads at most `limit` bytes of `stream` (decompressed: got inflates before the stream), then
 * stops reading and destroys it, so an answer of any size costs at most `limit` bytes of memory.
 */
export async function readBounded(stream: Readable, limit: number): Promise<BoundedBody> {
  const chunks: Buffer[] = [];
  let bytes = 0;
  for await (const chunk of stream as AsyncIterable<Buffer>) {
    if (bytes + chunk.length > limit) {
      chunks.push(chunk.subarray(0, limit - bytes));
      stream.destroy();
      return { bytes: Buffer.concat(chunks, limit), truncated: true };
    }
    chunks.push(chunk);
    bytes += chunk.length;
  }
  return { bytes: Buffer.concat(chunks, bytes), truncated: false };
}
