/**
 * Checks a JSON value against a schema of an OpenAPI 3.1 document, for the subset of JSON Schema
 * that zod writes (type, enum, const, properties, required, additionalProperties, items, anyOf,
 * $ref, minimum/maximum, minItems). Every mismatch is listed by its path; a property the schema
 * does not list counts as one wherever `additionalProperties` is false, so an answer that carries
 * an undocumented field fails the check.
 */
type Schema = Record<string, unknown>;

function typeOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number';
  return typeof value;
}

function typeMatches(value: unknown, type: unknown): boolean {
  const types = Array.isArray(type) ? (type as string[]) : [type as string];
  const actual = typeOf(value);
  return types.some((t) => t === actual || (t === 'number' && actual === 'integer'));
}

export function schemaProblems(value: unknown, schema: Schema, doc: Schema, at = '$'): string[] {
  if (typeof schema.$ref === 'string') {
    const name = schema.$ref.replace('#/components/schemas/', '');
    const target = (doc.components as { schemas: Record<string, Schema> }).schemas[name];
    if (!target) return [`${at}: unresolvable ${schema.$ref}`];
    return schemaProblems(value, target, doc, at);
  }
  if (Array.isArray(schema.anyOf)) {
    const branches = (schema.anyOf as Schema[]).map((s) => schemaProblems(value, s, doc, at));
    const fitting = branches.find((b) => b.length === 0);
    return fitting ? [] : [`${at}: fits no anyOf branch (${branches.map((b) => b.join('; ')).join(' | ')})`];
  }
  const problems: string[] = [];
  if (schema.type !== undefined && !typeMatches(value, schema.type))
    return [`${at}: ${typeOf(value)}, expected ${JSON.stringify(schema.type)}`];
  if (Array.isArray(schema.enum) && !schema.enum.includes(value))
    problems.push(`${at}: ${JSON.stringify(value)} not in ${JSON.stringify(schema.enum)}`);
  if ('const' in schema && schema.const !== value)
    problems.push(`${at}: expected ${JSON.stringify(schema.const)}`);
  if (typeof value === 'number') {
    if (typeof schema.minimum === 'number' && value < schema.minimum) problems.push(`${at}: below minimum`);
    if (typeof schema.maximum === 'number' && value > schema.maximum) problems.push(`${at}: above maximum`);
  }
  if (Array.isArray(value)) {
    if (typeof schema.minItems === 'number' && value.length < schema.minItems)
      problems.push(`${at}: too few items`);
    if (schema.items) {
      for (const [i, v] of value.entries())
        problems.push(...schemaProblems(v, schema.items as Schema, doc, `${at}[${i}]`));
    }
  } else if (value && typeof value === 'object') {
    const props = (schema.properties ?? {}) as Record<string, Schema>;
    for (const name of (schema.required ?? []) as string[]) {
      if (!(name in value)) problems.push(`${at}.${name}: required, missing`);
    }
    for (const [name, v] of Object.entries(value)) {
      if (props[name]) problems.push(...schemaProblems(v, props[name], doc, `${at}.${name}`));
      else if (schema.additionalProperties === false) problems.push(`${at}.${name}: not documented`);
      else if (schema.additionalProperties && typeof schema.additionalProperties === 'object')
        problems.push(...schemaProblems(v, schema.additionalProperties as Schema, doc, `${at}.${name}`));
    }
  }
  return problems;
}

/** The schema the document gives for one answer of one route. */
export function responseSchema(doc: Schema, method: string, path: string, status: number): Schema {
  const op = (doc.paths as Record<string, Record<string, { responses: Record<string, Schema> }>>)[path]?.[
    method
  ];
  const answer = op?.responses[String(status)] as
    | { content?: Record<string, { schema: Schema }> }
    | undefined;
  const schema = answer?.content?.['application/json']?.schema;
  if (!schema) throw new Error(`${method.toUpperCase()} ${path} documents no JSON answer ${status}`);
  return schema;
}
