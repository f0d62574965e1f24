import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULT_WEBHOOK_SECRET, type Simulator, startSimulator } from '../../src/simulator/index.js';
import { get, getArray, post, type Receiver, startReceiver } from './helpers.js';

let sim: Simulator | undefined;
let receiver: Receiver | undefined;
afterEach(async () => {
  await sim?.close();
  await receiver?.close();
  sim = undefined;
  receiver = undefined;
});

async function send(s: Simulator, method: string, path: string, body?: unknown) {
  const res = await fetch(`${s.url}${path}`, {
    method,
    headers: { 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, body: text ? (JSON.parse(text) as unknown) : undefined };
}

describe('/_sim record endpoints', () => {
  it('add, change and remove records; the interface serves the result', async () => {
    sim = await startSimulator({ projects: 4 });
    const added = await send(sim, 'POST', '/_sim/records/projects', {
      projectID: '1001',
      projectName: 'New one',
    });
    expect(added.status).toBe(201);
    expect(added.body).toEqual({ projectID: 1001, projectName: 'New one' }); // id typed as the interface types it
    expect((await send(sim, 'POST', '/_sim/records/projects', { projectID: 1001 })).status).toBe(409);
    expect((await send(sim, 'POST', '/_sim/records/projects', { projectName: 'no id' })).status).toBe(400);
    expect((await send(sim, 'POST', '/_sim/records/widgets', { id: 1 })).status).toBe(400);

    const patched = await send(sim, 'PATCH', '/_sim/records/projects/1004', { projectStatus: 'Completed' });
    expect(patched.status).toBe(200);
    expect((await send(sim, 'PATCH', '/_sim/records/projects/9999', { projectStatus: 'x' })).status).toBe(
      404,
    );
    expect((await send(sim, 'DELETE', '/_sim/records/projects/1008')).status).toBe(204);
    expect((await send(sim, 'DELETE', '/_sim/records/projects/1008')).status).toBe(404);

    const all = await getArray(sim, '/integration/v1/projects');
    expect(all.map((p) => p.projectID)).toEqual([1000, 1001, 1004, 1012]);
    expect(all[2]?.projectStatus).toBe('Completed');
    expect((await send(sim, 'GET', '/_sim/records/projects/1001')).body).toEqual(all[1]);
    expect((await send(sim, 'GET', '/_sim/counts')).body).toEqual({ projects: 4, issuances: 60, units: 300 });
  });

  it('POST /_sim/units/append adds operations at the end of the log', async () => {
    sim = await startSimulator({ units: 5 });
    const r = await send(sim, 'POST', '/_sim/units/append', { count: 3 });
    expect(r.body).toEqual({ count: 3, firstId: '1000000020', lastId: '1000000028' });
    const page = await getArray(sim, '/integration/v1/units?offset=5');
    expect(page.map((u) => u.unitsOperationID)).toEqual(['1000000020', '1000000024', '1000000028']);
    expect((await send(sim, 'POST', '/_sim/units/append', { count: -1 })).status).toBe(400);
  });
});

describe('/_sim stats', () => {
  it('counts requests by path and status, so a test can count the pages a client fetched', async () => {
    sim = await startSimulator({ units: 250 });
    for (let off = 0; off < 300; off += 100)
      await getArray(sim, `/integration/v1/units?limit=100&offset=${off}`);
    await get(sim, '/integration/v1/units', {});
    const stats = (await send(sim, 'GET', '/_sim/stats')).body as {
      total: number;
      byPath: Record<string, Record<string, number>>;
    };
    expect(stats.byPath['/integration/v1/units']).toEqual({ '200': 3, '401': 1 });
    expect(stats.total).toBe(4); // admin calls are not counted
    expect((await send(sim, 'DELETE', '/_sim/stats')).status).toBe(204);
    expect(sim.stats.snapshot().total).toBe(0);
  });
});

describe('/_sim webhook steering', () => {
  it('configures the receiver at run time and sets per-ref decisions', async () => {
    receiver = await startReceiver(DEFAULT_WEBHOOK_SECRET);
    sim = await startSimulator();
    const cfg = await send(sim, 'POST', '/_sim/webhook', { url: receiver.url, delayMs: 0 });
    expect(cfg.status).toBe(200);
    expect(cfg.body).not.toHaveProperty('secret');
    expect((await send(sim, 'POST', '/_sim/webhook', { secret: 'plain' })).status).toBe(400);
    expect(
      (await send(sim, 'POST', '/_sim/decisions', { ref: 'm-1', decision: 'reject', reason: 'no units' }))
        .status,
    ).toBe(204);
    await post(sim, '/integration/v1/notify', {
      marketplaceTransactionRef: 'm-1',
      operationType: 'Retire',
      transactionAmount: 2,
    });
    const [ev] = await receiver.waitFor(1);
    expect(ev?.payload.data).toMatchObject({
      marketplaceTransactionRef: 'm-1',
      status: 'rejected',
      reason: 'no units',
    });
    const sent = (await send(sim, 'GET', '/_sim/webhooks')).body as { type: string }[];
    expect(sent.map((s) => s.type)).toEqual(['transaction.rejected']);
    const notes = (await send(sim, 'GET', '/_sim/notifications')).body as { ref: string; status: number }[];
    expect(notes).toMatchObject([{ ref: 'm-1', status: 202 }]);
    expect((await send(sim, 'DELETE', '/_sim/notifications')).status).toBe(204);
    expect(sim.notifications).toHaveLength(0);
  });

  it('GET /_sim/custody lists custody ids, which a deposit extends', async () => {
    sim = await startSimulator();
    await send(sim, 'POST', '/_sim/webhooks/deposit', { issuanceId: '100100' });
    const custody = (await send(sim, 'GET', '/_sim/custody')).body as Record<string, unknown[]>;
    expect(custody.projects).toEqual([1000, 1004, 1008]);
    expect(custody.issuances).toContain('100100');
    expect(custody.units).toHaveLength(10);
  });
});
