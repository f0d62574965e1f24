import type { SqliteContext } from '../../src/app/sqliteStores.js';
import { apiCaller } from '../helpers/http.js';
import { type ApiOverrides, sqliteApiComponent } from '../helpers/sqliteApi.js';

/**
 * An API listener on a free loopback port over the test's SQLite file, with `overrides` (another
 * store's seams), and a caller with `token`.
 */
export async function serveApi(ctx: SqliteContext, overrides: ApiOverrides, token: string) {
  const api = sqliteApiComponent(ctx, overrides);
  await api.start();
  return { call: apiCaller(`http://127.0.0.1:${api.address()!.port}`, token), stop: () => api.stop() };
}
