import { describe, expect, it } from 'vitest';
import { buildOpenApi } from '../../src/api/openapi.js';
import { routeSpecs } from '../../src/api/server.js';
import { loadConfig } from '../../src/config/config.js';

/**
 * One naming style for the API's fields: camelCase, as the operator's interface and most of the API
 * spell them (docs/api.md "Field names"). The snake_case names that predate the decision are still
 * shown, each beside its camelCase twin and marked deprecated until the next major version. The
 * rule, on `/openapi.json`: every snake_case property has its camelCase twin in the same schema, of
 * the same type, the snake_case one deprecated as its alias; and no snake_case name beyond the
 * frozen list below appears (a new field is camelCase only). Query parameters and request bodies
 * take camelCase names only.
 */

/** The deprecated aliases, by schema: this list may only shrink (in the next major version, to nothing). */
const DEPRECATED_ALIASES: Record<string, string[]> = {
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

/** Written here rather than imported, so the rule does not lean on the code it checks. */
const camel = (snake: string) => snake.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());
const isSnake = (name: string) => name.includes('_') && !BOOKKEEPING.test(name);

type Schema = {
  properties?: Record<string, Schema>;
  items?: Schema;
  anyOf?: Schema[];
  oneOf?: Schema[];
  allOf?: Schema[];
  deprecated?: boolean;
  description?: string;
};

/** Every object schema under `schema` that has properties (itself, nested objects, arrays, unions). */
function objectsUnder(schema: Schema | undefined, out: Schema[] = []): Schema[] {
  if (!schema || typeof schema !== 'object') return out;
  if (schema.properties) out.push(schema);
  for (const child of [
    ...Object.values(schema.properties ?? {}),
    schema.items,
    ...(schema.anyOf ?? []),
    ...(schema.oneOf ?? []),
    ...(schema.allOf ?? []),
  ])
    objectsUnder(child, out);
  return out;
}

const propertyNames = (schema: Schema) => objectsUnder(schema).flatMap((o) => Object.keys(o.properties!));

/** What is wrong with each snake_case property of `object`: a missing, differing or deprecated twin, or no deprecation. */
function aliasProblems(object: Schema): string[] {
  const problems: string[] = [];
  const props = object.properties ?? {};
  for (const [name, alias] of Object.entries(props)) {
    if (!isSnake(name)) continue;
    const twinName = camel(name);
    const twin = props[twinName];
    if (!twin) {
      problems.push(`${name}: no ${twinName}`);
      continue;
    }
    if (alias.deprecated !== true) problems.push(`${name}: not deprecated`);
    if (alias.description !== `alias of ${twinName}; removed in the next major version`)
      problems.push(`${name}: description ${JSON.stringify(alias.description)}`);
    if (twin.deprecated) problems.push(`${twinName}: deprecated`);
    const { deprecated: _a, description: _b, ...aliasType } = alias;
    const { deprecated: _c, description: _d, ...twinType } = twin;
    if (JSON.stringify(aliasType) !== JSON.stringify(twinType))
      problems.push(`${name}: other type than ${twinName}`);
  }
  return problems;
}

type Doc = {
  components: { schemas: Record<string, Schema> };
  paths: Record<
    string,
    Record<
      string,
      {
        parameters?: Array<{ name: string }>;
        requestBody?: { content: Record<string, { schema: Schema }> };
      }
    >
  >;
};

describe('API field names', () => {
  const doc = buildOpenApi(routeSpecs(loadConfig({ env: {} })), { version: '1' }) as Doc;
  const schemas = doc.components.schemas;

  it('are camelCase, but for the frozen snake_case aliases', () => {
    const snakeBySchema = Object.fromEntries(
      Object.entries(schemas)
        .map(([id, schema]) => [id, propertyNames(schema).filter(isSnake)] as const)
        .filter(([, names]) => names.length > 0),
    );
    expect(snakeBySchema).toEqual(DEPRECATED_ALIASES);
  });

  it('every snake_case property has its camelCase twin in the same schema, of the same type, and is marked deprecated', () => {
    const problems = Object.entries(schemas).flatMap(([id, schema]) =>
      objectsUnder(schema).flatMap((o) => aliasProblems(o).map((p) => `${id}.${p}`)),
    );
    expect(problems).toEqual([]);
    // Required alike: a client may rely on the twin wherever it relied on the alias.
    const op = schemas.Operation as Schema & { required: string[] };
    for (const name of DEPRECATED_ALIASES.Operation!)
      expect(op.required.includes(camel(name)), name).toBe(op.required.includes(name));
  });

  it('the rule is not blind: a missing twin, a twin of another type, an alias not deprecated', () => {
    const alias = {
      type: 'string',
      deprecated: true,
      description: 'alias of fooBar; removed in the next major version',
    };
    expect(aliasProblems({ properties: { foo_bar: alias } as Record<string, Schema> })).toEqual([
      'foo_bar: no fooBar',
    ]);
    expect(
      aliasProblems({
        properties: { fooBar: { type: 'integer' }, foo_bar: alias } as Record<string, Schema>,
      }),
    ).toEqual(['foo_bar: other type than fooBar']);
    expect(
      aliasProblems({
        properties: { fooBar: { type: 'string' }, foo_bar: { type: 'string' } } as Record<string, Schema>,
      }),
    ).toEqual(['foo_bar: not deprecated', 'foo_bar: description undefined']);
  });

  it('query parameters and request bodies take camelCase names only', () => {
    const names: string[] = [];
    for (const [path, methods] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(methods)) {
        for (const p of op.parameters ?? []) names.push(`${method} ${path} ?${p.name}`);
        for (const content of Object.values(op.requestBody?.content ?? {}))
          for (const n of propertyNames(content.schema)) names.push(`${method} ${path} body.${n}`);
      }
    }
    expect(names.length).toBeGreaterThan(20);
    expect(names.filter((n) => n.includes('_'))).toEqual([]);
  });

  it('camelCase is what most fields already are', () => {
    const all = Object.values(schemas).flatMap(propertyNames);
    const camelNames = all.filter((n) => /[a-z][A-Z]/.test(n) && !n.includes('_'));
    const snake = all.filter(isSnake);
    expect(camelNames.length).toBeGreaterThan(3 * snake.length);
  });
});
