import { request } from 'node:http';

/** One request as the hostile-input tests send it: any method, headers and body, chunked or not. */
export interface RawRequest {
  method: string;
  path: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
  /** Send the body with Transfer-Encoding: chunked, in pieces of this many bytes (default: with Content-Length). */
  chunkBytes?: number;
}

/** The answer, or how the exchange failed (a timeout is the safety net, never a measurement). */
export type RawAnswer =
  | {
      kind: 'answer';
      status: number;
      headers: Record<string, string | string[] | undefined>;
      text: string;
      // biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary JSON answers
      json: any;
    }
  | { kind: 'timeout' }
  | { kind: 'error'; message: string };

/** Generous: an answer is expected in milliseconds; this only keeps a hang from stalling the suite. */
const SAFETY_TIMEOUT_MS = 15_000;

/**
 * Sends `req` to `base` over node:http (fetch would fix the content type and refuse some headers)
 * on a fresh connection, and reads the whole answer.
 */
export function rawRequest(base: string, req: RawRequest): Promise<RawAnswer> {
  const url = new URL(req.path, base);
  const body = req.body === undefined ? undefined : Buffer.from(req.body);
  const headers: Record<string, string | number> = { ...req.headers };
  if (body !== undefined && req.chunkBytes === undefined) headers['content-length'] = body.byteLength;
  if (req.chunkBytes !== undefined) headers['transfer-encoding'] = 'chunked';
  return new Promise((resolve) => {
    let settled = false;
    const settle = (answer: RawAnswer) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(answer);
    };
    const r = request(
      {
        host: url.hostname,
        port: url.port,
        path: `${url.pathname}${url.search}`,
        method: req.method,
        headers,
        agent: false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', (e) => settle({ kind: 'error', message: e.message }));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let json: unknown = text;
          try {
            json = JSON.parse(text);
          } catch {
            // not JSON: the text is the answer
          }
          settle({ kind: 'answer', status: res.statusCode ?? 0, headers: res.headers, text, json });
        });
      },
    );
    const timer = setTimeout(() => {
      settle({ kind: 'timeout' });
      r.destroy();
    }, SAFETY_TIMEOUT_MS);
    // The server may answer (413) and close before the whole body is written: the answer counts.
    r.on('error', (e) => settle({ kind: 'error', message: e.message }));
    if (body === undefined) {
      r.end();
    } else if (req.chunkBytes === undefined) {
      r.end(body);
    } else {
      for (let i = 0; i < body.byteLength; i += req.chunkBytes) r.write(body.subarray(i, i + req.chunkBytes));
      r.end();
    }
  });
}

/** `text` padded with trailing JSON whitespace to exactly `bytes` bytes (still the same JSON). */
export function padJson(text: string, bytes: number): string {
  const length = Buffer.byteLength(text);
  if (length > bytes) throw new Error(`JSON of ${length} bytes cannot be padded down to ${bytes}`);
  return text + ' '.repeat(bytes - length);
}
