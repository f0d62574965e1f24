/**
 * Reads a request body into memory up to a limit, counting while reading: an oversized body is
 * refused as soon as it crosses the limit, never buffered whole first.
 */

/** The body's bytes, or why it was refused. */
export type BodyResult =
  | { readonly ok: true; readonly bytes: Buffer }
  | { readonly ok: false; readonly status: 413; readonly reason: string };

/** Refuses a declared Content-Length above the limit before reading anything. */
export function declaredTooLarge(contentLength: string | undefined, limit: number): boolean {
  if (contentLength === undefined) return false;
  const n = Number(contentLength);
  return Number.isFinite(n) && n > limit;
}

/** Reads `stream` (null for an empty body) up to `limit` bytes. */
export async function readBoundedBody(
  stream: ReadableStream<Uint8Array> | null,
  limit: number,
): Promise<BodyResult> {
  if (stream === null) return { ok: true, bytes: Buffer.alloc(0) };
  const reader = stream.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      // Stop reading; the listener answers 413 and closes the connection.
      reader.cancel().catch(() => undefined);
      return { ok: false, status: 413, reason: `body larger than ${limit} bytes` };
    }
    chunks.push(value);
  }
  return {
    ok: true,
    bytes:
      chunks.length === 1
        ? Buffer.from(chunks[0]!.buffer, chunks[0]!.byteOffset, chunks[0]!.byteLength)
        : Buffer.concat(chunks),
  };
}
