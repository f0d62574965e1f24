import type { Context } from 'hono';
import { HTTPException } from 'hono/http-exception';

/** The request body parsed as JSON; a 400 naming the problem when it is not. */
export async function readJsonBody(c: Context): Promise<unknown> {
  const text = await c.req.text();
  if (text.trim() === '')
    throw new HTTPException(400, { message: 'request body is empty; expected a JSON object' });
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new HTTPException(400, { message: 'request body is not valid JSON' });
  }
}
