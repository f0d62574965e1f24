import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/common/clock.js';
import { operatorRate } from '../../src/context.js';
import { runSync } from '../../src/mirror/syncRun.js';
import { startSimulator } from '../../src/simulator/index.js';
import { sqliteBackend } from '../../src/sqlite/mirror.js';
import { testContext } from '../helpers/context.js';
import { apiCaller } from '../helpers/http.js';
import { sqliteApiComponent } from '../helpers/sqliteApi.js';
import { captureLog, expectMirrorEqualsRegistry } from './harness.js';

const LIMIT = 20;
const CEILING = 200;
const UNITS = 6_000;
const PAGE = 10;
const TOKEN = 'test-api-token-0123456789';

/**
 * Time is virtual: it moves only when the client waits (its rate limit, a Retry-After), and the
 * simulator's limit reads the same clock, so the figures are exact and the test never sleeps.
 */
describe('adaptive rate against an operator limiting to 20 req/s', () => {
  it('converges near the limit with few 429s, and the mirror equals upstream', async () => {
    const clock = new ManualClock();
    const sleep = async (ms: number) => clock.advance(ms);
    const sim = await startSimulator({
      projects: 3,
      issuances: 5,
      units: UNITS,
      maxPageSize: PAGE,
      rateLimit: { perSecond: LIMIT },
      clock,
    });
    const ctx = testContext({
      clock,
      sleep,
      overrides: {
        'operator.url': sim.url,
        'operator.api_key': 'sim-api-key',
        'operator.rate_per_second': CEILING,
        'sync.page_size': PAGE,
        'database.synchronous': 'normal',
        'api.listen': '127.0.0.1:0',
        'api.token': TOKEN,
      },
    });
    const api = sqliteApiComponent(ctx);
    await api.start();
    const call = apiCaller(`http://127.0.0.1:${api.address()!.port}`, TOKEN);
    const log = captureLog(ctx);
    try {
      // Before the daemon has called the operator, there is no rate to show.
      const before = (await call('GET', '/status')).json as Record<string, unknown>;
      expect(before.operatorRate).toBeUndefined();

      const started = clock.now();
      const outcome = await runSync(ctx, 'units', { backend: sqliteBackend(ctx.database.sqlite), sleep });
      expect(outcome.status, outcome.error ?? '').toBe('succeeded');
      const seconds = (clock.now() - started) / 1000;
      expectMirrorEqualsRegistry({ sim, ctx, close: async () => {} }, ['unit_operations']);

      const path = '/integration/v1/units';
      const requests = sim.stats.count(path);
      const refused = sim.stats.count(path, '429');
      expect(requests).toBeGreaterThan(UNITS / PAGE);
      // Few refusals: the start (200 → 100 → 50 → 25 → 12.5) and one per climb past the limit.
      expect(refused).toBeGreaterThan(0);
      expect(refused / requests).toBeLessThan(0.05);
      // The pace the operator saw is near its limit (never above it over the run).
      const pace = (requests - refused) / seconds;
      expect(pace).toBeGreaterThan(0.6 * LIMIT);
      expect(pace).toBeLessThanOrEqual(LIMIT * 1.05);
      const rate = operatorRate(ctx);
      expect(rate?.ceiling).toBe(CEILING);
      expect(rate!.current).toBeGreaterThan(0.5 * LIMIT);
      expect(rate!.current).toBeLessThan(1.5 * LIMIT);
      // Every cut was logged with its figures.
      const cuts = log.filter((l) => l.event === 'operator.rate.decreased');
      expect(cuts.length).toBe(refused);
      expect(cuts[0]).toMatchObject({ ratePerSecond: CEILING / 2, retryAfterMs: 1000 });

      // The daemon's status and metrics show the rate now.
      const status = (await call('GET', '/status')).json as { operatorRate?: unknown };
      expect(status.operatorRate).toEqual({ current: rate!.current, ceiling: CEILING });
      const metrics = (await call('GET', '/metrics')).text;
      const line = metrics.split('\n').find((l) => l.startsWith('vcu_sync_operator_rate_per_second '));
      expect(Number(line?.split(' ')[1])).toBeCloseTo(rate!.current, 6);
    } finally {
      await api.stop();
      ctx.operator().close();
      ctx.dispose();
      await sim.close();
    }
  }, 300_000);
});
