import {
  type ApiLinks,
  type ApiOptions,
  createApiApp,
  createApiComponent,
  type RouteRegistrar,
  routeRegistrars,
} from '../../src/api/server.js';
import { sqliteApi } from '../../src/app/sqliteDaemon.js';
import type { SqliteContext } from '../../src/app/sqliteStores.js';

/** What a test replaces of the API over its SQLite file: a seam of another store, a wake, /readyz's facts. */
export type ApiOverrides = Partial<ApiLinks & ApiOptions>;

/** The API's seams over the test's SQLite file, as the daemon's SQLite factory hands them, with `overrides`. */
export function sqliteApiOf(ctx: SqliteContext, overrides: ApiOverrides = {}): ApiLinks & ApiOptions {
  return { ...sqliteApi(ctx), ...overrides };
}

/** Every route area over the test's SQLite file (and `overrides`). */
export function sqliteRegistrars(ctx: SqliteContext, overrides: ApiOverrides = {}): RouteRegistrar[] {
  return routeRegistrars(sqliteApiOf(ctx, overrides));
}

/** The API listener over the test's SQLite file, as the daemon runs it; `registrars` replace the routes. */
export function sqliteApiComponent(
  ctx: SqliteContext,
  overrides: ApiOverrides = {},
  registrars?: readonly RouteRegistrar[],
) {
  const api = sqliteApiOf(ctx, overrides);
  return createApiComponent(ctx, registrars ?? routeRegistrars(api), api);
}

/** The API as a Hono app over the test's SQLite file. */
export function sqliteApiApp(ctx: SqliteContext) {
  const api = sqliteApiOf(ctx);
  return createApiApp(ctx, routeRegistrars(api), new AbortController().signal, api);
}
