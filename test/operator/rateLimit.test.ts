import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/common/clock.js';
import { OperatorClient } from '../../src/operator/client.js';
import {
  initialRate,
  newRateBudget,
  nextRate,
  type RateConfig,
  type RateEvent,
  RateLimiter,
  type RateState,
} from '../../src/operator/rateLimit.js';

const CONFIG: RateConfig = { ceiling: 20, floor: 0.5, increasePerSecond: 1 };
const T = 1_000_000;

const state = (rate: number, decreasedAt: number | null = null, notBefore = 0): RateState => ({
  rate,
  decreasedAt,
  notBefore,
});

describe('nextRate', () => {
  const cases: Array<[string, RateState, RateEvent, RateConfig, RateState]> = [
    ['a success adds increase/rate', state(10), { kind: 'ok', sentAt: T }, CONFIG, state(10.1)],
    ['a success at the ceiling changes nothing', state(20), { kind: 'ok', sentAt: T }, CONFIG, state(20)],
    ['a success never passes the ceiling', state(19.99), { kind: 'ok', sentAt: T }, CONFIG, state(20)],
    [
      'the increase step is configurable',
      state(4),
      { kind: 'ok', sentAt: T },
      { ...CONFIG, increasePerSecond: 2 },
      state(4.5),
    ],
    [
      'a 429 halves the rate and forbids requests until its Retry-After',
      state(20),
      { kind: 'limited', sentAt: T - 10, at: T, retryAfterMs: 3000 },
      CONFIG,
      state(10, T, T + 3000),
    ],
    [
      'a 429 without Retry-After halves the rate and forbids nothing later',
      state(20),
      { kind: 'limited', sentAt: T - 10, at: T },
      CONFIG,
      state(10, T, T),
    ],
    [
      'a 429 never takes the rate below the floor',
      state(0.8, T - 5000),
      { kind: 'limited', sentAt: T - 10, at: T, retryAfterMs: 1000 },
      CONFIG,
      state(0.5, T, T + 1000),
    ],
    [
      'a floor above the ceiling is the ceiling',
      state(2),
      { kind: 'limited', sentAt: T - 10, at: T },
      { ceiling: 2, floor: 5, increasePerSecond: 1 },
      state(2, T, T),
    ],
    [
      'a 429 to a request sent before the last cut does not cut again, but its Retry-After holds',
      state(10, T - 100, T + 900),
      { kind: 'limited', sentAt: T - 200, at: T, retryAfterMs: 2000 },
      CONFIG,
      state(10, T - 100, T + 2000),
    ],
    [
      'a shorter Retry-After never shortens the wait already ordered',
      state(10, T - 100, T + 5000),
      { kind: 'limited', sentAt: T - 200, at: T, retryAfterMs: 1000 },
      CONFIG,
      state(10, T - 100, T + 5000),
    ],
    [
      'a 429 to a request sent after the last cut cuts again',
      state(10, T - 2000, T - 1000),
      { kind: 'limited', sentAt: T - 500, at: T, retryAfterMs: 1000 },
      CONFIG,
      state(5, T, T + 1000),
    ],
    [
      'a success after a cut keeps the cut and the wait on record',
      state(10, T - 100, T + 900),
      { kind: 'ok', sentAt: T },
      CONFIG,
      state(10.1, T - 100, T + 900),
    ],
  ];
  it.each(cases)('%s', (_name, current, event, config, expected) => {
    const next = nextRate(current, event, config);
    expect(next.rate).toBeCloseTo(expected.rate, 9);
    expect(next.decreasedAt).toBe(expected.decreasedAt);
    expect(next.notBefore).toBe(expected.notBefore);
  });

  it('starts at the ceiling', () => {
    expect(initialRate(CONFIG)).toEqual(state(20));
  });

  it('climbs back additively: about increasePerSecond for each second of successes at the rate', () => {
    // dr/dn = 1/r, so from 5 to 10 takes (10^2 - 5^2) / 2 = 37.5 successes: at ~7.5 req/s, ~5 s.
    let s = state(5);
    let n = 0;
    while (s.rate < 10) {
      s = nextRate(s, { kind: 'ok', sentAt: T }, CONFIG);
      n++;
    }
    expect(n).toBeGreaterThanOrEqual(37);
    expect(n).toBeLessThanOrEqual(39);
  });
});

/** A clock that only moves when the limiter waits, and a log of the waits. */
function virtualTime() {
  const clock = new ManualClock(T);
  const waits: number[] = [];
  const sleep = async (ms: number) => {
    waits.push(ms);
    clock.advance(ms);
  };
  return { clock, waits, sleep };
}

describe('RateLimiter', () => {
  it('paces requests at the rate after a burst of one second', async () => {
    const { clock, sleep } = virtualTime();
    const limiter = new RateLimiter({ config: CONFIG, clock, sleep });
    const sentAt: number[] = [];
    for (let i = 0; i < 60; i++) {
      await limiter.acquire();
      sentAt.push(clock.now());
    }
    expect(sentAt.slice(0, 20).every((t) => t === T)).toBe(true);
    // 40 more at 20/s: the last leaves 2 s after the start.
    expect(sentAt.at(-1)).toBe(T + 2000);
  });

  it('sends nothing before a Retry-After, then paces at the halved rate', async () => {
    const { clock, sleep } = virtualTime();
    const changes: number[] = [];
    const limiter = new RateLimiter({ config: CONFIG, clock, sleep, onChange: (r) => changes.push(r) });
    await limiter.acquire();
    const sent = clock.now();
    limiter.feedback({ kind: 'limited', sentAt: sent, at: sent, retryAfterMs: 3000 });
    expect(limiter.rate).toBe(10);
    expect(changes).toEqual([10]);
    const times: number[] = [];
    for (let i = 0; i < 11; i++) {
      await limiter.acquire();
      times.push(clock.now());
    }
    // The first right at the Retry-After (no saved-up burst), then one every 100 ms.
    expect(times[0]).toBe(sent + 3000);
    expect(times.at(-1)).toBe(sent + 3000 + 1000);
  });

  it('serves waiters in arrival order, each after its own wait', async () => {
    const { clock, sleep } = virtualTime();
    const limiter = new RateLimiter({
      config: { ceiling: 2, floor: 0.5, increasePerSecond: 1 },
      clock,
      sleep,
    });
    const order: number[] = [];
    await Promise.all([0, 1, 2, 3, 4].map((i) => limiter.acquire().then(() => order.push(i))));
    expect(order).toEqual([0, 1, 2, 3, 4]);
    expect(clock.now()).toBe(T + 1500);
  });
});

describe('limiters sharing one budget (the threads of one daemon)', () => {
  it('keep to one rate together: a second of burst, then the rate, whoever asks', async () => {
    const { clock, sleep } = virtualTime();
    const budget = newRateBudget();
    const dispatcher = new RateLimiter({ config: CONFIG, clock, sleep, budget });
    const mirror = new RateLimiter({ config: CONFIG, clock, sleep, budget });
    const sentAt: number[] = [];
    for (let i = 0; i < 30; i++) {
      await dispatcher.acquire();
      sentAt.push(clock.now());
      await mirror.acquire();
      sentAt.push(clock.now());
    }
    expect(sentAt.slice(0, 20).every((t) => t === T)).toBe(true);
    // 60 in all at 20/s, as from one limiter: two limiters of their own would be done at T + 500.
    expect(sentAt.at(-1)).toBe(T + 2000);
  });

  it("one limiter's 429 halves the rate of all and holds all until its Retry-After", async () => {
    const { clock, sleep } = virtualTime();
    const budget = newRateBudget();
    const changes: number[] = [];
    const dispatcher = new RateLimiter({ config: CONFIG, clock, sleep, budget });
    const mirror = new RateLimiter({
      config: CONFIG,
      clock,
      sleep,
      budget,
      onChange: (r) => changes.push(r),
    });
    await dispatcher.acquire();
    const sent = clock.now();
    mirror.feedback({ kind: 'limited', sentAt: sent, at: sent, retryAfterMs: 3000 });
    expect(dispatcher.rate).toBe(10);
    expect(changes).toEqual([10]);
    await dispatcher.acquire();
    expect(clock.now()).toBe(sent + 3000);
    await mirror.acquire();
    expect(clock.now()).toBe(sent + 3100);
    // Successes through either limiter climb the one rate.
    for (let i = 0; i < 5; i++) dispatcher.feedback({ kind: 'ok', sentAt: clock.now() });
    expect(mirror.rate).toBeCloseTo(10.49, 2);
  });

  it('a limiter made later joins the bucket as it is, instead of starting a fresh one', async () => {
    const { clock, sleep } = virtualTime();
    const budget = newRateBudget();
    const first = new RateLimiter({ config: CONFIG, clock, sleep, budget });
    for (let i = 0; i < 20; i++) await first.acquire();
    first.feedback({ kind: 'limited', sentAt: clock.now(), at: clock.now() });
    const later = new RateLimiter({ config: CONFIG, clock, sleep, budget });
    expect(later.rate).toBe(10);
    // The burst was spent (a fresh bucket would have 20 tokens): each waits its turn at 10/s.
    await later.acquire();
    expect(clock.now()).toBe(T + 100);
    await later.acquire();
    expect(clock.now()).toBe(T + 200);
  });
});

describe('OperatorClient rate feedback', () => {
  let server: http.Server;
  let base: string;
  let answers: Array<{ status: number; headers?: Record<string, string> }> = [];
  beforeAll(async () => {
    server = http.createServer((_req, res) => {
      const next = answers.shift() ?? { status: 200 };
      res.writeHead(next.status, { 'content-type': 'application/json', ...next.headers });
      res.end(next.status === 200 ? '[]' : '{"message":"API rate limit exceeded"}');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });

  it('halves on a 429, waits out its Retry-After, climbs on 2xx, and ignores other errors', async () => {
    const { clock, waits, sleep } = virtualTime();
    const rates: number[] = [];
    const client = new OperatorClient({
      baseUrl: base,
      apiKey: 'k-123456789',
      ratePerSecond: 8,
      clock,
      sleep,
      onRate: (r) => rates.push(r),
    });
    try {
      answers = [{ status: 429, headers: { 'retry-after': '2' } }];
      await expect(client.list('units', '/units')).rejects.toMatchObject({ kind: 'rate-limited' });
      expect(client.rate).toEqual({ current: 4, ceiling: 8 });
      const refusedAt = clock.now();
      await client.list('units', '/units');
      // The next request waited for the Retry-After before it left.
      expect(waits.at(-1)).toBe(2000);
      expect(clock.now()).toBe(refusedAt + 2000);
      expect(client.rate.current).toBeCloseTo(4.25, 9);
      answers = [{ status: 503 }, { status: 404 }];
      await expect(client.getOne('project', '/p/1')).rejects.toMatchObject({ kind: 'transient' });
      expect(await client.getOne('project', '/p/1')).toBeNull();
      expect(client.rate.current).toBeCloseTo(4.25, 9);
      expect(rates).toEqual([4, 4.25]);
    } finally {
      client.close();
    }
  });
});

describe('RateLimiter and a stop', () => {
  it('lets a waiter go at once when its signal aborts during a Retry-After, which still holds for others', async () => {
    const clock = new ManualClock(T);
    const limiter = new RateLimiter({ config: CONFIG, clock });
    await limiter.acquire();
    // An hour's Retry-After on the real timer: only the abort can end the first wait in this test.
    limiter.feedback({ kind: 'limited', sentAt: T, at: T, retryAfterMs: 3_600_000 });
    const stop = new AbortController();
    const stopped = limiter.acquire(stop.signal);
    stop.abort();
    await stopped;
    // Another caller already stopping does not wait either; the limit itself is unchanged.
    await limiter.acquire(AbortSignal.abort());
    expect(limiter.rate).toBe(10);
    expect(limiter.reserve()).toBeGreaterThanOrEqual(3_600_000 - 1);
  });
});
