import { z } from 'zod';
import { aliasDescription, type CamelCase, camelCase } from '../../common/fieldAliases.js';

/**
 * Answers shared by many routes, as zod: the same schemas type the handlers' values and generate
 * `/openapi.json`. `.meta({ id })` makes each a named component of the document.
 */

/** Every refusal and failure: one line saying what is wrong (never a stack trace, never a secret). */
export const errorBody = z
  .object({ error: z.string().describe('what is wrong, in one line') })
  .meta({ id: 'Error' });

/** One problem with one field of a notification (see outbox/validate.ts FieldError). */
export const fieldError = z
  .object({
    field: z.string().describe('the field as the interface spells it, or "(body)" for the whole input'),
    reason: z.string().describe('why it was refused'),
  })
  .meta({ id: 'FieldError' });

/** 422: every field problem of a notification, not just the first. */
export const fieldErrorsBody = z
  .object({ error: z.string(), errors: z.array(fieldError).min(1) })
  .meta({ id: 'FieldErrors' });

/** An ISO 8601 instant, as every timestamp the API shows (UTC, milliseconds). */
export const instant = z.string().meta({ format: 'date-time' });

/** GET /healthz. */
export const livenessBody = z.object({ ok: z.literal(true) }).meta({ id: 'Liveness' });

/** GET /readyz (see health/readiness.ts Readiness). */
export const readinessBody = z
  .object({
    ready: z.boolean(),
    reasons: z.array(z.string()).describe('every reason it is not ready, one line each (empty when ready)'),
  })
  .meta({ id: 'Readiness' });

/** A page of a cursor-paginated mirror list. */
export function mirrorPage<T extends z.ZodType>(item: T) {
  return z.object({
    items: z.array(item),
    next: z.string().nullable().describe('pass as `cursor` for the next page; null on the last page'),
  });
}

/**
 * `shape` with each of `aliased` shown under both names (src/common/fieldAliases.ts): its camelCase twin
 * (the schema as given, description and all) just before it, and the snake_case name marked
 * deprecated, "alias of twin; removed in the next major version".
 */
export function withDeprecatedAliases<
  Shape extends Record<string, z.ZodType>,
  Aliased extends keyof Shape & string,
>(shape: Shape, aliased: readonly Aliased[]) {
  const out: Record<string, z.ZodType> = {};
  for (const [name, schema] of Object.entries(shape)) {
    if ((aliased as readonly string[]).includes(name)) {
      const twin = camelCase(name);
      out[twin] = schema;
      out[name] = schema.meta({ deprecated: true, description: aliasDescription(twin) });
    } else out[name] = schema;
  }
  return out as Shape & { [K in Aliased as CamelCase<K>]: Shape[K] };
}
