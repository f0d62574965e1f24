import type { SqliteContext } from '../../src/app/sqliteStores.js';
import { testContext } from '../helpers/context.js';
import { apiCaller } from '../helpers/http.js';
import { sqliteApiComponent } from '../helpers/sqliteApi.js';

export const TOKEN = 'test-api-token-0123456789';

/** A real context and a real API listener on a free loopback port. */
export async function startApi(overrides: Record<string, unknown> = {}) {
  const ctx = testContext({
    overrides: {
      'api.listen': '127.0.0.1:0',
      'api.token': TOKEN,
      'operator.marketplace_id': 'mkt-default',
      ...overrides,
    },
  });
  const api = sqliteApiComponent(ctx);
  await api.start();
  const base = `http://127.0.0.1:${api.address()!.port}`;
  const call = apiCaller(base, TOKEN);
  return {
    ctx: ctx as SqliteContext & { dispose: () => void },
    base,
    call,
    close: async () => {
      await api.stop();
      ctx.dispose();
    },
  };
}
