import { describe, expect, it } from 'vitest';
import { buildOpenApi } from '../../src/api/openapi.js';
import { routeSpecs } from '../../src/api/server.js';
import { loadConfig } from '../../src/config.js';

/**
 * One naming style for the API's fields: camelCase, as the operator's interface and most of the API
 * spell them (README "Field names"). The snake_case names that predate the decision are listed here
 * and in README, frozen: a new field in snake_case fails this test, and so does a listed one that
 * was renamed without README following.
 */

/** snake_case names kept as they are (README "Field names"), by schema. */
const KNOWN_SNAKE_CASE: Record<string, string[]> = {
  // The outbox's stored columns, shown as stored (the plan: camelCase twins, then these as aliases).
  Operation: [
    'order_key',
    'body_hash',
    'next_attempt_at',
    'lease_owner',
    'lease_until',
    'last_error',
    'last_status',
    'decision_reason',
    'created_at',
    'updated_at',
    'accepted_at',
    'decided_at',
    'finished_at',
    'scrubbed_at',
    'retried_at',
    'attempt_log',
  ],
  Attempt: ['outbox_id', 'started_at', 'duration_ms', 'status_code'],
  Change: ['record_id'],
};

/** The mirror's bookkeeping columns: a leading underscore keeps them apart from the operator's fields. */
const BOOKKEEPING = /^_[a-z]+(_[a-z]+)*$/;

type Schema = {
  properties?: Record<string, Schema>;
  items?: Schema;
  anyOf?: Schema[];
  oneOf?: Schema[];
  allOf?: Schema[];
};

/** Every property name under a schema (nested objects, arrays, unions). */
function propertyNames(schema: Schema | undefined, out = new Set<string>()): Set<string> {
  if (!schema || typeof schema !== 'object') return out;
  for (const [name, child] of Object.entries(schema.properties ?? {})) {
    out.add(name);
    propertyNames(child, out);
  }
  for (const child of [
    schema.items,
    ...(schema.anyOf ?? []),
    ...(schema.oneOf ?? []),
    ...(schema.allOf ?? []),
  ])
    propertyNames(child, out);
  return out;
}

describe('API field names', () => {
  const doc = buildOpenApi(routeSpecs(loadConfig({ env: {} })), { version: '1' }) as {
    components: { schemas: Record<string, Schema> };
  };
  const snakeBySchema = Object.fromEntries(
    Object.entries(doc.components.schemas)
      .map(
        ([id, schema]) =>
          [id, [...propertyNames(schema)].filter((n) => n.includes('_') && !BOOKKEEPING.test(n))] as const,
      )
      .filter(([, names]) => names.length > 0),
  );

  it('are camelCase, but for the snake_case names README lists as kept', () => {
    expect(snakeBySchema).toEqual(KNOWN_SNAKE_CASE);
  });

  it('camelCase is what most fields already are', () => {
    const all = Object.values(doc.components.schemas).flatMap((s) => [...propertyNames(s)]);
    const camel = all.filter((n) => /[a-z][A-Z]/.test(n) && !n.includes('_'));
    const snake = all.filter((n) => n.includes('_') && !BOOKKEEPING.test(n));
    expect(camel.length).toBeGreaterThan(3 * snake.length);
  });
});
