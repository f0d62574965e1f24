import { createApiComponent, type RouteRegistrar } from '../../src/api/server.js';
import type { AppContext } from '../../src/context.js';
import { apiCaller } from '../helpers/http.js';

/** An API listener on a free loopback port over `registrars` (a store's routes), and a caller with `token`. */
export async function serveApi(ctx: AppContext, registrars: readonly RouteRegistrar[], token: string) {
  const api = createApiComponent(ctx, registrars);
  await api.start();
  return { call: apiCaller(`http://127.0.0.1:${api.address()!.port}`, token), stop: () => api.stop() };
}
