import type { Readable } from 'node:stream';
import StreamArray from 'stream-json/streamers/StreamArray.js';
import { OperatorError } from './errors.js';

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

async function* streamRecords(buffered: Buffer[], rest: AsyncIterator<Buffer>): AsyncGenerator<unknown> {
  const parser = StreamArray.withParser();
  const feed = async () => {
    try {
      for (const chunk of buffered)
        if (!parser.write(chunk)) await new Promise((r) => parser.once('drain', r));
      buffered.length = 0;
      for (let next = await rest.next(); !next.done; next = await rest.next()) {
        if (!parser.write(next.value)) await new Promise((r) => parser.once('drain', r));
      }
      parser.end();
    } catch (err) {
      parser.destroy(err as Error);
    }
  };
  void feed();
  try {
    for await (const item of parser as AsyncIterable<{ key: number; value: unknown }>) yield item.value;
  } catch (err) {
    if (err instanceof OperatorError) throw err;
    const message = (err as Error).message ?? '';
    if (/parser|token|JSON|expected/i.test(message))
      throw notAnArray('a body that is not a valid JSON array');
    throw new OperatorError('transient', `operator body broke off while streaming: ${message}`);
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
