import type { Context } from 'hono';
import { HTTPException } from 'hono/http-exception';
import { readRequestBody } from '../http/httpBody.js';
import { MAX_BODY_BYTES } from './requestGuard.js';

const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * The request body parsed as JSON; a 400 naming the problem when it is not, a 413 past
 * {@link MAX_BODY_BYTES} (chunked bodies are counted as they arrive; a declared length over it was
 * refused before any route ran).
 */
export async function readJsonBody(c: Context): Promise<unknown> {
  const body = await readRequestBody(c, MAX_BODY_BYTES);
  if (!body.ok) {
    throw new HTTPException(body.status, {
      message: body.status === 413 ? `request body is larger than ${MAX_BODY_BYTES} bytes` : body.reason,
    });
  }
  let text: string;
  try {
    text = utf8.decode(body.bytes);
  } catch {
    throw new HTTPException(400, { message: 'request body is not valid UTF-8' });
  }
  if (text.trim() === '')
    throw new HTTPException(400, { message: 'request body is empty; expected a JSON object' });
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new HTTPException(400, { message: 'request body is not valid JSON' });
  }
}
