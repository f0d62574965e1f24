import { z } from 'zod';
import type { RouteSpec } from './routeSpec.js';

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
        Object.entries({
          ...(spec.method === 'post' ? STATE_CHANGING_RESPONSES : {}),
          ...(spec.body ? BODY_RESPONSES : {}),
          ...spec.responses,
        }).map(([code, description]) => [
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
    // Basic credentials are for reads only (a browser would replay them on a cross-site POST).
    else if (spec.method === 'post') operation.security = [{ bearer: [] }];
    paths[spec.path] = { ...paths[spec.path], [spec.method]: operation };
  }
  return {
    openapi: '3.1.0',
    info: { title: 'vcu-sync internal API', version },
    components: {
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
