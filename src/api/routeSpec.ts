import type { Context } from 'hono';
import { HTTPException } from 'hono/http-exception';
import { z } from 'zod';
import { isCalendarDay } from '../common/clock.js';

export { isCalendarDay };

/**
 * One answer of a route. A JSON answer's body is `schema`; an error answer (status 400 and up) given
 * without one is `{ error }` (ERROR_BODY, what the server's error handler and the middleware send).
 * A success answer must name its schema: the document refuses to build otherwise (a test builds it).
 */
export interface ResponseSpec {
  description: string;
  /** The body, as zod (the same schema the handler's value is typed or checked by). */
  schema?: z.ZodType;
  /** Content type (default: the route's `produces`, else application/json). */
  contentType?: string;
  /** Response headers, name → description (default: none). */
  headers?: Record<string, string>;
}

/**
 * What a route accepts and answers, declared once beside its handler: the route validates its
 * query and body with the same zod schemas `/openapi.json` is generated from, and its answers are
 * typed by the response schemas, so the document cannot drift from the code.
 *
 * Adding a route: declare its spec in the route file's spec list (listed in server.ts), with a
 * unique camelCase `operationId` (the method name generated clients give it), `query`/`params`/
 * `body` as zod, and every answer with a `schema` (zod; give a shared one an id with
 * `.meta({ id: 'Name' })` to make it a named component). 401, 403, 415 and 400/413 are added for
 * you where they apply. test/api/openapi.test.ts lints the document and generates a client from it.
 */
export interface RouteSpec {
  method: 'get' | 'post';
  /** OpenAPI-style path, e.g. /v1/projects/{id}. */
  path: string;
  /** Unique across the API, camelCase, stable: generated clients name their call after it. */
  operationId: string;
  summary: string;
  /** Path parameters by name (default: each `{name}` of the path, a string). */
  params?: z.ZodObject;
  /** Query parameters (default: none). */
  query?: z.ZodObject;
  /** JSON request body (default: none). */
  body?: z.ZodType;
  /** Status code → answer; a plain string is the description of an error answer `{ error }`. */
  responses: Record<string, ResponseSpec | string>;
  /** Served without the bearer token (default: false). */
  public?: boolean;
  /** Response content type (default: application/json). */
  produces?: string;
}

/**
 * A query integer written as plain decimal digits, no sign, no leading zero, at most 15 digits:
 * `Number()` would also take `0x10`, `0b11`, `" 5"`, `""`, `+5` and `1e3`, so a typo or a client
 * bug would silently mean some other number. Documented as an integer.
 */
export function decimalParam(min: number, max = Number.MAX_SAFE_INTEGER) {
  return z
    .string()
    .regex(/^(0|[1-9][0-9]{0,14})$/, 'expected a plain decimal integer, e.g. 25')
    .transform(Number)
    .pipe(z.number().int().min(min).max(max))
    .meta({ type: 'integer', minimum: min, maximum: max, pattern: undefined });
}

/** A query parameter that is a positive page size, at most 1000. */
export const limitParam = decimalParam(1, 1000).optional().describe('page size, 1-1000 (default: 100)');
/** The opaque cursor from the previous page's `next`. */
export const cursorParam = z
  .string()
  .min(1)
  .optional()
  .describe("opaque cursor from the previous page's `next`");

const day = z.string().refine(isCalendarDay, 'expected YYYY-MM-DD, a real date').meta({ format: 'date' });
/** Inclusive lower date bound. */
export const fromParam = day.optional().describe('on or after this date (YYYY-MM-DD)');
/** Inclusive upper date bound. */
export const toParam = day.optional().describe('on or before this date (YYYY-MM-DD)');
/** Whether removed records are listed. */
export const removedParam = z
  .enum(['false', 'true', 'only'])
  .optional()
  .describe(
    'records a complete scan no longer found: false hides them (default), true includes, only lists just them',
  );

/** One line naming each bad query parameter. */
export function describeQueryIssues(error: z.ZodError): string {
  return error.issues
    .map((i) =>
      i.code === 'unrecognized_keys'
        ? `unknown parameter ${i.keys.join(', ')}`
        : `${i.path.join('.') || 'query'}: ${i.message}`,
    )
    .join('; ');
}

/** Parses the query with the route's schema, or answers 400 naming each bad parameter. */
export function parseQuery<T extends z.ZodObject>(c: Context, schema: T): z.output<T> {
  const result = schema.safeParse(c.req.query());
  if (!result.success) throw new HTTPException(400, { message: describeQueryIssues(result.error) });
  return result.data;
}
