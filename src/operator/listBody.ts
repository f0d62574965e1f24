import type { Readable } from 'node:stream';
import { OperatorError } from './errors.js';
import { JsonArraySplitter } from './splitJsonArray.js';

/**
 * A list body: parsed at once when it is small (the fast path for ordinary pages), or streamed
 * record by record when it grows past the buffer limit (a list that ignores paging and answers with
 * its whole history), so memory stays flat whatever the size.
 */
export type ListBody =
  | { readonly kind: 'array'; readonly records: readonly unknown[]; readonly bytes: number }
  | { readonly kind: 'stream'; readonly records: AsyncIterable<unknown> };

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

async function* streamRecords(buffered: Buffer[], rest: AsyncIterator<Buffer>): AsyncGenerator<unknown> {
  const splitter = new JsonArraySplitter();
  const split = (chunk: Buffer) => {
    try {
      return splitter.push(chunk);
    } catch (err) {
      throw notAnArray(`a body that is not a valid JSON array (${(err as Error).message})`);
    }
  };
  // Shift, so each buffered chunk can be collected as soon as it is split.
  for (let chunk = buffered.shift(); chunk; chunk = buffered.shift()) {
    for (const text of split(chunk)) yield parseElement(text);
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
    for (const text of split(next.value)) yield parseElement(text);
  }
  try {
    splitter.end();
  } catch (err) {
    throw notAnArray(`a body that is not a valid JSON array (${(err as Error).message})`);
  }
}

/**
 * Reads a list body from `stream`: up to `bufferLimit` bytes are buffered and parsed in one go;
 * past that the rest is parsed as a stream.
 */
export async function readListBody(stream: Readable, bufferLimit: number): Promise<ListBody> {
  const chunks: Buffer[] = [];
  let bytes = 0;
  const iterator = stream[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  try {
    for (let next = await iterator.next(); !next.done; next = await iterator.next()) {
      chunks.push(next.value);
      bytes += next.value.length;
      if (bytes > bufferLimit) return { kind: 'stream', records: streamRecords(chunks, iterator) };
    }
  } catch (err) {
    throw new OperatorError('transient', `operator body broke off: ${(err as Error).message}`);
  }
  return { kind: 'array', records: parseArray(Buffer.concat(chunks, bytes).toString('utf8')), bytes };
}
