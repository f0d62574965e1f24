import { z } from 'zod';
import type { RouteSpec } from './routeSpec.js';

/** The OpenAPI 3.1 document of the internal API, generated from the route specs the routes use. */
export function buildOpenApi(specs: readonly RouteSpec[], version: string): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const spec of specs) {
    const pathParams = [...spec.path.matchAll(/\{(\w+)\}/g)].map((m) => ({
      name: m[1],
      in: 'path',
      required: true,
      schema: { type: 'string' },
    }));
    const queryParams = spec.query
      ? Object.entries(spec.query.shape).map(([name, schema]) => {
          const json = z.toJSONSchema(schema as z.ZodType, { io: 'input', unrepresentable: 'any' }) as Record<
            string,
            unknown
          >;
          const { description, ...rest } = json;
          delete rest.$schema;
          return {
            name,
            in: 'query',
            required: !(schema as z.ZodType).safeParse(undefined).success,
            description,
            schema: rest,
          };
        })
      : [];
    const operation: Record<string, unknown> = {
      summary: spec.summary,
      parameters: [...pathParams, ...queryParams],
      responses: Object.fromEntries(
        Object.entries(spec.responses).map(([code, description]) => [
          code,
          { description, content: { [spec.produces ?? 'application/json']: {} } },
        ]),
      ),
    };
    if (spec.body) {
      const schema = z.toJSONSchema(spec.body, { io: 'input', unrepresentable: 'any' }) as Record<
        string,
        unknown
      >;
      delete schema.$schema;
      operation.requestBody = { required: true, content: { 'application/json': { schema } } };
    }
    if (spec.public) operation.security = [];
    paths[spec.path] = { ...paths[spec.path], [spec.method]: operation };
  }
  return {
    openapi: '3.1.0',
    info: { title: 'vcu-sync internal API', version },
    components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
    security: [{ bearer: [] }],
    paths,
  };
}
