import { z } from 'zod';
import type { ResponseSpec, RouteSpec } from './routeSpec.js';
import { errorBody } from './schemas/common.js';

/** Answers every state-changing route may give, whatever it does (see requestGuard.ts and auth.ts). */
const STATE_CHANGING_RESPONSES: Record<string, string> = {
  '401': 'no token, or a wrong one',
  '403':
    'cross-site request refused: an Origin other than this API, or Sec-Fetch-Site other than same-origin/none; or Basic credentials, which are for reads only (use Authorization: Bearer)',
  '415': 'a body, or a Content-Type, other than application/json',
};

/** Answers of a route that reads a JSON body. */
const BODY_RESPONSES: Record<string, string> = {
  '400': 'not JSON',
  '413': 'body larger than 1 MiB (1048576 bytes), declared or counted',
};

type Json = Record<string, unknown>;

const COMPONENT_REF = '#/components/schemas/';

/** `#/$defs/X` (what zod writes for a schema with an id) → `#/components/schemas/X`, everywhere in `value`. */
function relink(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(relink);
  if (!value || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value).map(([k, v]) => [
      k,
      k === '$ref' && typeof v === 'string' ? v.replace(/^#\/\$defs\//, COMPONENT_REF) : relink(v),
    ]),
  );
}

/**
 * Converts zod schemas to the document's JSON Schemas, collecting every schema with an id
 * (`.meta({ id })`) once as a named component. Two different schemas under one name are refused:
 * a generated client would silently get one of them.
 */
class SchemaCollector {
  readonly components: Record<string, Json> = {};
  private readonly texts = new Map<string, string>();

  convert(schema: z.ZodType, io: 'input' | 'output'): Json {
    const json = z.toJSONSchema(schema, { io, unrepresentable: 'any', target: 'draft-2020-12' }) as Json;
    const { $schema: _dialect, $defs, ...rest } = json;
    for (const [name, def] of Object.entries(($defs ?? {}) as Record<string, Json>)) {
      const relinked = relink(def) as Json;
      const text = JSON.stringify(relinked);
      const seen = this.texts.get(name);
      if (seen !== undefined && seen !== text)
        throw new Error(
          `openapi: two different schemas are named ${name} (or one differs as input and output)`,
        );
      this.texts.set(name, text);
      this.components[name] = relinked;
    }
    return relink(rest) as Json;
  }
}

function parametersOf(spec: RouteSpec, schemas: SchemaCollector): Json[] {
  const pathNames = [...spec.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!);
  const declared = spec.params?.shape ?? {};
  for (const name of Object.keys(declared)) {
    if (!pathNames.includes(name))
      throw new Error(`openapi: ${spec.operationId} declares {${name}}, not in its path`);
  }
  const pathParams = pathNames.map((name) => {
    const schema = declared[name] as z.ZodType | undefined;
    const json = schema ? schemas.convert(schema, 'input') : { type: 'string' };
    const { description, ...rest } = json;
    return { name, in: 'path', required: true, ...(description ? { description } : {}), schema: rest };
  });
  const queryParams = Object.entries(spec.query?.shape ?? {}).map(([name, schema]) => {
    const { description, ...rest } = schemas.convert(schema as z.ZodType, 'input');
    return {
      name,
      in: 'query',
      required: !(schema as z.ZodType).safeParse(undefined).success,
      ...(description ? { description } : {}),
      schema: rest,
    };
  });
  return [...pathParams, ...queryParams];
}

/** The route's answers, with the ones every route of its kind may give added. */
function answersOf(spec: RouteSpec): Record<string, ResponseSpec> {
  const implied: Record<string, string> = {
    ...(spec.public ? {} : { '401': 'no token, or a wrong one' }),
    ...(spec.query ? { '400': 'a bad parameter, named in the error' } : {}),
    ...(spec.method === 'post' ? STATE_CHANGING_RESPONSES : {}),
    ...(spec.body ? BODY_RESPONSES : {}),
  };
  const all = { ...implied, ...spec.responses };
  return Object.fromEntries(
    Object.entries(all).map(([code, r]) => [code, typeof r === 'string' ? { description: r } : r]),
  );
}

function responseOf(spec: RouteSpec, code: string, r: ResponseSpec, schemas: SchemaCollector): Json {
  const isError = Number(code) >= 400;
  // Errors come from the middleware and the error handler as JSON, whatever the route produces.
  const type = r.contentType ?? (isError ? 'application/json' : (spec.produces ?? 'application/json'));
  let schema: Json;
  if (r.schema) schema = schemas.convert(r.schema, 'output');
  else if (isError && type === 'application/json') schema = schemas.convert(errorBody, 'output');
  else if (type.startsWith('text/')) schema = { type: 'string' };
  else throw new Error(`openapi: ${spec.operationId} answers ${code} with no schema`);
  const headers = Object.entries(r.headers ?? {}).map(([name, description]) => [
    name,
    { description, schema: { type: 'string' } },
  ]);
  return {
    description: r.description,
    ...(headers.length ? { headers: Object.fromEntries(headers) } : {}),
    content: { [type]: { schema } },
  };
}

/** What the document says about itself. */
export interface DocumentInfo {
  /** package.json version. */
  version: string;
}

/**
 * The OpenAPI 3.1 document of the internal API, generated from the route specs the routes use:
 * parameters, request and response bodies all from the routes' zod schemas.
 */
export function buildOpenApi(specs: readonly RouteSpec[], info: DocumentInfo): Json {
  const schemas = new SchemaCollector();
  const paths: Record<string, Json> = {};
  const ids = new Set<string>();
  for (const spec of specs) {
    if (!/^[a-z][A-Za-z0-9]*$/.test(spec.operationId) || ids.has(spec.operationId))
      throw new Error(`openapi: operationId ${spec.operationId} is not unique camelCase`);
    ids.add(spec.operationId);
    const operation: Json = {
      operationId: spec.operationId,
      summary: spec.summary,
      parameters: parametersOf(spec, schemas),
      responses: Object.fromEntries(
        Object.entries(answersOf(spec)).map(([code, r]) => [code, responseOf(spec, code, r, schemas)]),
      ),
    };
    if (spec.body) {
      const schema = schemas.convert(spec.body, 'input');
      operation.requestBody = { required: true, content: { 'application/json': { schema } } };
    }
    if (spec.public) operation.security = [];
    // Basic credentials are for reads only (a browser would replay them on a cross-site POST).
    else if (spec.method === 'post') operation.security = [{ bearer: [] }];
    paths[spec.path] = { ...paths[spec.path], [spec.method]: operation };
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'vcu-sync internal API',
      version: info.version,
      description:
        "The marketplace's internal API over the operator mirror and the operations queue. Generate a client from this document (see docs/api.md, A typed client from /openapi.json).",
      license: { name: 'Proprietary', identifier: 'LicenseRef-Proprietary' },
    },
    // Relative: the API answers wherever this document was fetched from (directly or behind a proxy).
    servers: [{ url: '/', description: 'the vcu-sync daemon that served this document' }],
    components: {
      // Sorted: the document reads (and diffs) the same whatever order the routes are declared in.
      schemas: Object.fromEntries(Object.entries(schemas.components).sort(([a], [b]) => a.localeCompare(b))),
      securitySchemes: {
        bearer: { type: 'http', scheme: 'bearer' },
        basic: {
          type: 'http',
          scheme: 'basic',
          description:
            'any user name, the API token as the password; GET only (for the status page in a browser)',
        },
      },
    },
    security: [{ bearer: [] }, { basic: [] }],
    paths,
  };
}
