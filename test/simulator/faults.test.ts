import { afterEach, describe, expect, it, vi } from 'vitest';
import { type Simulator, startSimulator } from '../../src/simulator/index.js';
import { get, getArray, KEY, post } from './helpers.js';

let sim: Simulator | undefined;
afterEach(async () => {
  await sim?.close();
  sim = undefined;
});

const P = '/integration/v1/projects';
const U = '/integration/v1/units';

describe('deterministic fault queue', () => {
  it('500, 502, 503: JSON error for exactly the queued number of requests, then normal service', async () => {
    sim = await startSimulator();
    sim.faults.next(1, '500');
    sim.faults.next(1, '502');
    sim.faults.next(2, '503');
    const statuses = [];
    for (let i = 0; i < 5; i++) statuses.push((await get(sim, P)).status);
    expect(statuses).toEqual([500, 502, 503, 503, 200]);
    expect(sim.faults.injected.map((f) => f.kind)).toEqual(['500', '502', '503', '503']);
    expect(sim.stats.count(P, '503')).toBe(2);
  });

  it('429 carries the configured Retry-After; 401 refuses even a right key', async () => {
    sim = await startSimulator();
    sim.faults.next(1, '429', { retryAfterSec: 7 });
    sim.faults.next(1, '401');
    const limited = await get(sim, P);
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).toBe('7');
    expect(limited.body).toHaveProperty('message');
    expect((await get(sim, P)).status).toBe(401);
    expect((await get(sim, P)).status).toBe(200);
  });

  it('a path prefix and method target the fault; other requests pass untouched', async () => {
    sim = await startSimulator();
    sim.faults.next(1, '503', { pathPrefix: U });
    sim.faults.next(1, '500', { pathPrefix: '/integration/v1/notify', method: 'POST' });
    expect((await get(sim, P)).status).toBe(200);
    expect((await get(sim, U)).status).toBe(503);
    expect((await get(sim, U)).status).toBe(200);
    const r = await post(sim, '/integration/v1/notify', {
      marketplaceTransactionRef: 'f',
      operationType: 'Retire',
      transactionAmount: 1,
    });
    expect(r.status).toBe(500);
    expect(sim.notifications[0]?.status).toBe(500);
  });

  it('latency delays the answer by at least the given time and then serves normally', async () => {
    sim = await startSimulator();
    sim.faults.next(1, 'latency', { latencyMs: 150 });
    const t = performance.now();
    const r = await get(sim, P);
    expect(performance.now() - t).toBeGreaterThanOrEqual(140);
    expect(r.status).toBe(200);
  });

  it('reset destroys the socket without a response; the stats record it as reset', async () => {
    sim = await startSimulator();
    sim.faults.next(1, 'reset');
    await expect(fetch(`${sim.url}${P}`, { headers: { apikey: KEY } })).rejects.toThrow();
    expect((await get(sim, P)).status).toBe(200);
    expect(sim.stats.count(P, 'reset')).toBe(1);
  });

  it('a reset /notify is recorded with status reset and sends no webhook', async () => {
    sim = await startSimulator({ webhook: { url: 'http://127.0.0.1:9/none', delayMs: 0 } });
    sim.faults.next(1, 'reset', { pathPrefix: '/integration/v1/notify' });
    const body = JSON.stringify({
      marketplaceTransactionRef: 'r',
      operationType: 'Retire',
      transactionAmount: 1,
    });
    await expect(fetch(`${sim.url}/integration/v1/notify`, { method: 'POST', body })).rejects.toThrow();
    await sim.webhooksIdle();
    // The server sees the close a moment after the client does: poll, do not sleep.
    await vi.waitFor(() => expect(sim?.notifications[0]?.status).toBe('reset'));
    expect(sim.webhooksSent).toHaveLength(0);
  });

  it('truncated short-body: Content-Length promises more than arrives; cut-json: complete response, broken JSON', async () => {
    sim = await startSimulator();
    sim.faults.next(1, 'truncated');
    const res = await fetch(`${sim.url}${U}?limit=100`, { headers: { apikey: KEY } });
    expect(res.status).toBe(200);
    await expect(res.text()).rejects.toThrow();

    sim.faults.next(1, 'truncated', { truncateMode: 'cut-json' });
    const cut = await get(sim, `${U}?limit=100`);
    expect(cut.status).toBe(200);
    expect(cut.text.startsWith('[{')).toBe(true);
    expect(() => JSON.parse(cut.text)).toThrow();
    expect(sim.stats.count(U, 'truncated')).toBe(2);
  });

  it('truncated also cuts an unpaginated stream mid-body', async () => {
    sim = await startSimulator({ units: 50_000, unitsUnpaginated: true });
    sim.faults.next(1, 'truncated');
    const res = await fetch(`${sim.url}${U}`, { headers: { apikey: KEY } });
    await expect(res.text()).rejects.toThrow();
    expect((await getArray(sim, U)).length).toBe(50_000);
  });

  it('html answers an HTML error page with text/html, as 502 or 200', async () => {
    sim = await startSimulator();
    sim.faults.next(1, 'html');
    sim.faults.next(1, 'html', { htmlStatus: 200 });
    const a = await get(sim, P);
    expect(a.status).toBe(502);
    expect(a.headers.get('content-type')).toMatch(/^text\/html/);
    expect(a.text).toContain('<html>');
    const b = await get(sim, P);
    expect(b.status).toBe(200);
    expect(b.headers.get('content-type')).toMatch(/^text\/html/);
  });

  it('invalid-record puts one wrongly typed record in a page or data read', async () => {
    sim = await startSimulator();
    sim.faults.next(1, 'invalid-record');
    const page = await getArray(sim, `${P}?limit=10`);
    const bad = page.filter((p) => typeof p.projectID !== 'number');
    expect(bad).toHaveLength(1);
    expect(bad[0]?.projectID).toBe('abc');
    expect(page.filter((p) => typeof p.projectID === 'number')).toHaveLength(9);

    sim.faults.next(1, 'invalid-record', { pathPrefix: U });
    const units = await getArray(sim, `${U}?limit=5`);
    expect(units.filter((u) => u.unitsQuantity === 'lots')).toHaveLength(1);

    sim.faults.next(1, 'invalid-record', { corruptField: 'issuanceVintageYear', corruptValue: 'twenty' });
    const data = await get(sim, '/integration/v1/issuances/100000');
    expect((data.body as Record<string, unknown>).issuanceVintageYear).toBe('twenty');
    // The registry itself is untouched.
    expect(typeof sim.registry.page('projects', 0, 10).find((p) => p.projectID === 'abc')).toBe('undefined');
  });

  it('drift remove: records before the offset vanish between pages, so the next page skips some', async () => {
    sim = await startSimulator({ projects: 40 });
    const before = [...sim.registry.iterate('projects')].map((p) => p.projectID);
    const first = await getArray(sim, `${P}?limit=10&offset=0`);
    sim.faults.next(1, 'drift', { driftOp: 'remove', driftCount: 2 });
    const second = await getArray(sim, `${P}?limit=10&offset=10`);
    expect(first.map((p) => p.projectID)).toEqual(before.slice(0, 10));
    // Offsets shifted down by two: records 10 and 11 were never served.
    expect(second.map((p) => p.projectID)).toEqual(before.slice(12, 22));
    expect(sim.registry.count('projects')).toBe(38);
    expect(sim.faults.injected[0]?.detail).toMatchObject({
      op: 'remove',
      offset: 10,
      ids: [before[9], before[8]],
    });
  });

  it('drift insert: new records before the offset push served ones into the next page (duplicates)', async () => {
    sim = await startSimulator({ issuances: 40 });
    const first = await getArray(sim, '/integration/v1/issuances?limit=10');
    sim.faults.next(1, 'drift', { driftOp: 'insert', driftCount: 2 });
    const second = await getArray(sim, '/integration/v1/issuances?limit=10&offset=10');
    const firstIds = first.map((i) => i.issuanceId);
    // The last two records of page one come again at the start of page two.
    expect(second.slice(0, 2).map((i) => i.issuanceId)).toEqual(firstIds.slice(8, 10));
    expect(sim.registry.count('issuances')).toBe(42);
    const ids = (sim.faults.injected[0]?.detail?.ids ?? []) as string[];
    expect(ids).toHaveLength(2);
    for (const id of ids) expect(sim.registry.get('issuances', id)?.issuanceId).toBe(id);
  });

  it('drift insert of more records than one key gap holds still shifts by exactly that many', async () => {
    sim = await startSimulator({ units: 100 });
    const first = await getArray(sim, `${U}?limit=20`);
    sim.faults.next(1, 'drift', { driftOp: 'insert', driftCount: 7 });
    const second = await getArray(sim, `${U}?limit=20&offset=20`);
    expect(second.slice(0, 7).map((u) => u.unitsOperationID)).toEqual(
      first.slice(13).map((u) => u.unitsOperationID),
    );
    const ids = [...sim.registry.iterate('units')].map((u) => Number(u.unitsOperationID));
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
    expect(ids).toHaveLength(107);
  });

  it('ignore-offset: a list answers its first page (limit honoured) whatever offset says', async () => {
    sim = await startSimulator({ projects: 40 });
    const all = [...sim.registry.iterate('projects')].map((p) => p.projectID);
    sim.faults.next(1, 'ignore-offset');
    expect((await get(sim, '/integration/v1/projects/1000')).status).toBe(200);
    const ignored = await getArray(sim, `${P}?limit=10&offset=20`);
    expect(ignored.map((p) => p.projectID)).toEqual(all.slice(0, 10));
    const honoured = await getArray(sim, `${P}?limit=10&offset=20`);
    expect(honoured.map((p) => p.projectID)).toEqual(all.slice(20, 30));
  });

  it('drift waits for a list request: data reads and /notify do not consume it', async () => {
    sim = await startSimulator();
    sim.faults.next(1, 'drift');
    expect((await get(sim, '/integration/v1/projects/1000')).status).toBe(200);
    expect(sim.faults.pending()).toHaveLength(1);
    await getArray(sim, `${P}?offset=5&limit=1`);
    expect(sim.faults.pending()).toHaveLength(0);
  });
});

describe('probabilistic faults', () => {
  it('are reproducible from the seed and hit roughly the configured share', async () => {
    const run = async (seed: number) => {
      const s = await startSimulator({ seed, faults: { error: 0.3, rateLimit: 0.2 } });
      const out: number[] = [];
      for (let i = 0; i < 60; i++) out.push((await get(s, `${P}?limit=1`)).status);
      await s.close();
      return out;
    };
    const a = await run(3);
    expect(await run(3)).toEqual(a);
    const failed = a.filter((s) => s !== 200).length;
    expect(failed).toBeGreaterThan(15);
    expect(failed).toBeLessThan(50);
    expect(a).toContain(429);
  });

  it('never apply to the admin endpoints', async () => {
    sim = await startSimulator({ faults: { error: 1 } });
    expect((await get(sim, P)).status).toBeGreaterThanOrEqual(500);
    expect((await fetch(`${sim.url}/_sim/stats`)).status).toBe(200);
  });
});

describe('fault admin endpoints', () => {
  it('POST /_sim/faults queues faults and sets rates; GET lists them; DELETE clears', async () => {
    sim = await startSimulator();
    const q = await post(sim, '/_sim/faults', [
      { kind: '429', count: 2, retryAfterSec: 3, pathPrefix: P },
      { kind: 'reset', pathPrefix: U },
    ]);
    expect(q.status).toBe(200);
    expect(sim.faults.pending()).toHaveLength(2);
    expect((await post(sim, '/_sim/faults', { kind: 'meltdown' })).status).toBe(400);
    expect((await post(sim, '/_sim/faults', { rates: { error: 2 } })).status).toBe(400);

    const r = await get(sim, P);
    expect(r.status).toBe(429);
    expect(r.headers.get('retry-after')).toBe('3');
    const listed = (await get(sim, '/_sim/faults')).body as {
      pending: { remaining: number }[];
      injected: unknown[];
    };
    expect(listed.pending[0]?.remaining).toBe(1);
    expect(listed.injected).toHaveLength(1);

    expect((await post(sim, '/_sim/faults', { rates: { error: 1 } })).status).toBe(200);
    expect((await fetch(`${sim.url}/_sim/faults`, { method: 'DELETE' })).status).toBe(204);
    expect((await get(sim, P)).status).toBe(200);
    expect((await get(sim, U)).status).toBe(200);
  });
});
