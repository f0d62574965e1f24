import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PUBLIC_PATHS } from '../../src/api/auth.js';
import type { createApiComponent } from '../../src/api/server.js';
import { SyncRequests } from '../../src/common/syncRequests.js';
import type { Component } from '../../src/context.js';
import { SyncCoordinator } from '../../src/mirror/coordinator.js';
import { createMirrorComponent } from '../../src/mirror/scheduler.js';
import { runSync } from '../../src/mirror/syncRun.js';
import { type Simulator, startSimulator } from '../../src/simulator/index.js';
import { sqliteBackend } from '../../src/sqlite/mirror.js';
import { testContext } from '../helpers/context.js';
import { apiCaller } from '../helpers/http.js';
import { sqliteApiApp, sqliteApiComponent } from '../helpers/sqliteApi.js';
import { transfer } from '../outbox/fixtures.js';
import { until } from './child.js';

const TOKEN = 'ops-api-token-0123456789';
let sim: Simulator;
let ctx: ReturnType<typeof testContext>;
let api: ReturnType<typeof createApiComponent>;
/** How the API asks for syncs: served only while the test's mirror scheduler runs. */
const syncs = new SyncRequests();
let base: string;
let call: ReturnType<typeof apiCaller>;

type Json = Record<string, unknown>;

/** Follows `next` from the first page; returns every item in order and the number of pages. */
async function allPages(path: string, limit: number): Promise<{ items: Json[]; pages: number }> {
  const items: Json[] = [];
  let cursor: string | null = null;
  let pages = 0;
  const sep = path.includes('?') ? '&' : '?';
  do {
    const res = await call('GET', `${path}${sep}limit=${limit}${cursor ? `&cursor=${cursor}` : ''}`);
    expect(res.status, res.text).toBe(200);
    items.push(...(res.json.items as Json[]));
    cursor = res.json.next as string | null;
    pages++;
  } while (cursor !== null && pages < 1000);
  return { items, pages };
}

async function syncAll(): Promise<void> {
  for (const target of ['projects', 'issuances', 'units', 'custody'] as const) {
    const outcome = await runSync(ctx, target, { backend: sqliteBackend(ctx.database.sqlite) });
    expect(outcome.status, outcome.error ?? '').toBe('succeeded');
  }
}

beforeAll(async () => {
  sim = await startSimulator({ projects: 25, issuances: 60, units: 250, webhook: { policy: 'none' } });
  ctx = testContext({
    overrides: {
      'operator.url': sim.url,
      'operator.api_key': 'sim-api-key',
      'operator.rate_per_second': 100_000,
      'operator.marketplace_id': 'mkt-ops',
      'api.listen': '127.0.0.1:0',
      'api.token': TOKEN,
      'sync.page_size': 40,
      'sync.on_startup': false,
      'sync.jitter_seconds': 0,
      'sync.schedule': { projects: 'off', issuances: 'off', units: 'off', custody: 'off' },
      'custody.projects': sim.registry.custodyIds('projects').map(String),
      'custody.issuances': sim.registry.custodyIds('issuances').map(String),
      'custody.units': sim.registry.custodyIds('units').map(String),
    },
  });
  await syncAll();
  api = sqliteApiComponent(ctx, { requestSync: syncs.request });
  await api.start();
  base = `http://127.0.0.1:${api.address()!.port}`;
  call = apiCaller(base, TOKEN);
});

afterAll(async () => {
  await api?.stop();
  ctx.operator().close();
  ctx.dispose();
  await sim.close();
});

/** Every route Hono serves (middleware excluded), with its params filled in. */
function servedRoutes(): Array<{ method: string; path: string; url: string }> {
  const app = sqliteApiApp(ctx);
  const seen = new Set<string>();
  const out: Array<{ method: string; path: string; url: string }> = [];
  for (const r of app.routes) {
    if (r.method === 'ALL' || r.path === '/*' || r.path === '*') continue;
    const key = `${r.method} ${r.path}`;
    if (seen.has(key)) continue;
    seen.add(key);
    const url = r.path.replace(/:resource/, 'projects').replace(/:(\w+)/g, 'x');
    out.push({ method: r.method, path: r.path, url });
  }
  return out;
}

describe('authentication', () => {
  it('serves /healthz without a token', async () => {
    const res = await call('GET', '/healthz', undefined, null);
    expect(res.status).toBe(200);
    expect(res.json).toEqual({ ok: true });
  });

  it('answers 401 on every other route without the token and with a wrong one', async () => {
    const routes = servedRoutes().filter((r) => !PUBLIC_PATHS.has(r.path));
    expect([...PUBLIC_PATHS].sort()).toEqual(['/healthz', '/readyz', '/runbook']);
    expect(routes.length).toBeGreaterThanOrEqual(15);
    for (const r of routes) {
      for (const token of [null, 'wrong-token-0123456789']) {
        const res = await call(r.method, r.url, r.method === 'POST' ? {} : undefined, token);
        expect(res.status, `${r.method} ${r.url} with ${token ?? 'no token'}`).toBe(401);
      }
    }
  });
});

describe('/openapi.json', () => {
  it('documents every route the API serves, with its method', async () => {
    const res = await call('GET', '/openapi.json');
    expect(res.status).toBe(200);
    const paths = res.json.paths as Record<string, Record<string, unknown>>;
    for (const r of servedRoutes()) {
      const openapiPath = r.path.replace(/:(\w+)/g, '{$1}');
      expect(paths[openapiPath], `${openapiPath} in /openapi.json`).toBeDefined();
      expect(paths[openapiPath]![r.method.toLowerCase()], `${r.method} ${openapiPath}`).toBeDefined();
    }
    for (const p of [
      '/healthz',
      '/status',
      '/metrics',
      '/',
      '/v1/projects',
      '/v1/projects/{id}',
      '/v1/issuances',
      '/v1/units',
      '/v1/changes',
      '/v1/operations',
      '/v1/operations/{ref}',
      '/v1/operations/{ref}/retry',
      '/v1/operations/{ref}/cancel',
      '/v1/sync/{resource}',
    ]) {
      expect(paths[p], p).toBeDefined();
    }
  });
});

describe('status endpoints', () => {
  it('GET /status is the health JSON, /metrics Prometheus text, / an HTML page', async () => {
    const status = await call('GET', '/status');
    expect([200, 503]).toContain(status.status);
    expect(['ok', 'warning', 'critical']).toContain(status.json.status);
    const metrics = await call('GET', '/metrics');
    expect(metrics.status).toBe(200);
    expect(metrics.type).toMatch(/^text\/plain/);
    expect(metrics.text).toMatch(/^# HELP /m);
    const page = await call('GET', '/');
    expect(page.status).toBe(200);
    expect(page.type).toMatch(/^text\/html/);
  });
});

describe('mirror lists', () => {
  it.each([
    ['/v1/projects', 'projects', 'projectID'],
    ['/v1/issuances', 'issuances', 'issuanceId'],
    ['/v1/units', 'units', 'unitsOperationID'],
  ] as const)('%s pages by cursor: every record exactly once', async (path, resource, key) => {
    const expected = [...sim.registry.snapshot(resource).keys()].sort();
    const { items, pages } = await allPages(path, 7);
    expect(pages).toBeGreaterThan(2);
    const keys = items.map((i) => String(i[key]));
    expect(new Set(keys).size).toBe(keys.length);
    expect([...keys].sort()).toEqual(expected);
  });

  it('GET /v1/projects/:id is the record; an unknown id is 404', async () => {
    const [id, record] = [...sim.registry.snapshot('projects')][0]!;
    const res = await call('GET', `/v1/projects/${id}`);
    expect(res.status).toBe(200);
    expect(res.json.projectName).toBe(record.projectName);
    // Keys are stored and served as TEXT (DESIGN: `12` and `"12"` are the same record).
    expect(res.json.projectID).toBe(String(record.projectID));
    expect((await call('GET', '/v1/projects/999999999')).status).toBe(404);
  });

  it('filters by status, country, projectID, issuance and dates', async () => {
    const projects = [...sim.registry.snapshot('projects').values()];
    const status = String(projects[0]!.projectStatus);
    const byStatus = await allPages(`/v1/projects?status=${encodeURIComponent(status)}`, 5);
    expect(byStatus.items.length).toBe(projects.filter((p) => p.projectStatus === status).length);
    expect(byStatus.items.every((p) => p.projectStatus === status)).toBe(true);

    const country = String(projects[0]!.projectCountry);
    const byCountry = await allPages(`/v1/projects?country=${encodeURIComponent(country)}`, 5);
    expect(byCountry.items.length).toBe(projects.filter((p) => p.projectCountry === country).length);

    const dates = projects.map((p) => String(p.ProjectStatusDate)).sort();
    const [from, to] = [dates[5]!, dates[15]!];
    const inRange = await allPages(`/v1/projects?from=${from}&to=${to}`, 5);
    expect(inRange.items.length).toBe(dates.filter((d) => d >= from && d <= to).length);
    expect(inRange.items.every((p) => String(p.ProjectStatusDate) >= from)).toBe(true);

    const issuances = [...sim.registry.snapshot('issuances').values()];
    const projectID = issuances[0]!.issuanceProjectId;
    const byProject = await allPages(`/v1/issuances?projectID=${projectID}`, 3);
    expect(byProject.items.length).toBe(issuances.filter((i) => i.issuanceProjectId === projectID).length);
    expect(byProject.items.every((i) => i.issuanceProjectId === projectID)).toBe(true);

    const units = [...sim.registry.snapshot('units').values()];
    const issuance = String(units[0]!.unitsIssuanceID);
    const byIssuance = await allPages(`/v1/units?issuance=${issuance}`, 3);
    expect(byIssuance.items.length).toBe(units.filter((u) => u.unitsIssuanceID === issuance).length);
    const unitStatus = String(units[0]!.unitsStatus);
    const byUnitStatus = await allPages(`/v1/units?status=${encodeURIComponent(unitStatus)}`, 50);
    expect(byUnitStatus.items.length).toBe(units.filter((u) => u.unitsStatus === unitStatus).length);
  });

  it.each([
    ['/v1/projects?limit=0', /limit/],
    ['/v1/projects?limit=abc', /limit/],
    ['/v1/projects?from=yesterday', /from: expected YYYY-MM-DD/],
    ['/v1/projects?colour=green', /unknown parameter colour/],
    ['/v1/projects?cursor=not-a-cursor', /cursor/],
    ['/v1/issuances?projectID=twelve', /projectID/],
    ['/v1/units?removed=maybe', /removed/],
    ['/v1/changes?after=-1', /after/],
    ['/v1/operations?state=lost', /state/],
  ])('%s is a 400 naming the parameter', async (url, message) => {
    const res = await call('GET', url);
    expect(res.status, res.text).toBe(400);
    expect(res.json.error).toMatch(message);
  });
});

describe('change feed and removals', () => {
  it('follows `last` until empty, and an upstream change + re-sync shows up as new changes', async () => {
    const feed: Json[] = [];
    let after = 0;
    for (let i = 0; i < 1000; i++) {
      const res = await call('GET', `/v1/changes?after=${after}&limit=97`);
      expect(res.status).toBe(200);
      if ((res.json.items as Json[]).length === 0) {
        expect(res.json.last).toBe(after);
        break;
      }
      feed.push(...(res.json.items as Json[]));
      expect(res.json.last).toBeGreaterThan(after);
      after = res.json.last as number;
    }
    const seqs = feed.map((c) => c.seq as number);
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    expect(new Set(seqs).size).toBe(seqs.length);
    const projectInserts = feed.filter((c) => c.resource === 'projects' && c.kind === 'insert');
    expect(projectInserts).toHaveLength(sim.registry.count('projects'));

    const [changedId] = [...sim.registry.snapshot('projects').keys()];
    const [removedId] = [...sim.registry.snapshot('projects').keys()].slice(-1);
    sim.registry.change('projects', changedId!, { projectName: 'Renamed upstream' });
    sim.registry.remove('projects', removedId!);
    expect((await runSync(ctx, 'projects', { backend: sqliteBackend(ctx.database.sqlite) })).status).toBe(
      'succeeded',
    );

    const next = await call('GET', `/v1/changes?after=${after}`);
    expect(next.status).toBe(200);
    const kinds = (next.json.items as Json[]).map((c) => [c.resource, c.record_id, c.kind]);
    expect(kinds).toContainEqual(['projects', String(changedId), 'update']);
    expect(kinds).toContainEqual(['projects', String(removedId), 'remove']);
    expect((await call('GET', `/v1/projects/${changedId}`)).json.projectName).toBe('Renamed upstream');

    // removed: hidden by default, listed with removed=true, alone with removed=only.
    const live = await allPages('/v1/projects', 100);
    expect(live.items.map((p) => String(p.projectID))).not.toContain(String(removedId));
    const only = await allPages('/v1/projects?removed=only', 100);
    expect(only.items.map((p) => String(p.projectID))).toEqual([String(removedId)]);
    expect(only.items[0]!._removed_at).not.toBeNull();
    const all = await allPages('/v1/projects?removed=true', 100);
    expect(all.items).toHaveLength(live.items.length + 1);
  });
});

describe('operations', () => {
  it('POST, GET list and one, cancel and retry over HTTP', async () => {
    const created = await call('POST', '/v1/operations', transfer('ops-api-1', { unitId: 80_001 }));
    expect(created.status, created.text).toBe(201);
    expect(created.json).toMatchObject({ marketplaceTransactionRef: 'ops-api-1', state: 'queued' });
    expect((await call('POST', '/v1/operations', transfer('ops-api-1', { unitId: 80_001 }))).status).toBe(
      200,
    );
    expect((await call('POST', '/v1/operations', transfer('ops-api-1', { unitId: 80_002 }))).status).toBe(
      409,
    );
    const invalid = await call('POST', '/v1/operations', { operationType: 'Transfer' });
    expect(invalid.status).toBe(422);
    expect(invalid.json.errors.length).toBeGreaterThan(0);
    for (let i = 2; i <= 5; i++) {
      expect(
        (await call('POST', '/v1/operations', transfer(`ops-api-${i}`, { unitId: 80_000 + i }))).status,
      ).toBe(201);
    }

    // Paging over the queue: every row once.
    const refs: string[] = [];
    let cursor: string | null = null;
    do {
      const page = await call('GET', `/v1/operations?limit=2${cursor ? `&cursor=${cursor}` : ''}`);
      expect(page.status).toBe(200);
      refs.push(...(page.json.items as Json[]).map((e) => String(e.marketplaceTransactionRef)));
      cursor = page.json.nextCursor as string | null;
    } while (cursor);
    expect(refs.sort()).toEqual(['ops-api-1', 'ops-api-2', 'ops-api-3', 'ops-api-4', 'ops-api-5']);

    const one = await call('GET', '/v1/operations/ops-api-2');
    expect(one.status).toBe(200);
    expect(one.json.marketplaceTransactionRef).toBe('ops-api-2');
    expect((await call('GET', '/v1/operations/no-such-ref')).status).toBe(404);

    const cancelled = await call('POST', '/v1/operations/ops-api-3/cancel');
    expect(cancelled.status).toBe(200);
    expect(cancelled.json.state).toBe('cancelled');
    const listCancelled = await call('GET', '/v1/operations?state=cancelled');
    expect((listCancelled.json.items as Json[]).map((e) => e.marketplaceTransactionRef)).toEqual([
      'ops-api-3',
    ]);

    // A failed row (as the dispatcher leaves one) goes back to the queue.
    ctx.database.sqlite
      .prepare(
        "UPDATE outbox SET state = 'failed', last_error = 'operator said no', finished_at = updated_at WHERE marketplaceTransactionRef = ?",
      )
      .run('ops-api-4');
    const retried = await call('POST', '/v1/operations/ops-api-4/retry');
    expect(retried.status, retried.text).toBe(200);
    expect(retried.json.state).toBe('queued');
    expect((await call('POST', '/v1/operations/no-such-ref/retry')).status).toBe(404);
    expect((await call('POST', '/v1/operations/no-such-ref/cancel')).status).toBe(404);
  });
});

describe('POST /v1/sync/:resource', () => {
  it('is 503 without the scheduler, 202 with it (and the run happens), 400 for an unknown resource', async () => {
    expect((await call('POST', '/v1/sync/projects')).status).toBe(503);
    expect((await call('POST', '/v1/sync/planets')).status).toBe(400);
    const mirror: Component = createMirrorComponent(ctx, {
      syncRequests: syncs,
      runner: new SyncCoordinator(ctx, (stop) => sqliteBackend(ctx.database.sqlite, stop)),
    });
    await mirror.start();
    try {
      const res = await call('POST', '/v1/sync/issuances');
      expect(res.status).toBe(202);
      expect(res.json.scheduled).toEqual(['issuances']);
      const apiRun = () =>
        ctx.database.sqlite
          .prepare("SELECT status FROM sync_runs WHERE resource = 'issuances' AND trigger = 'api'")
          .get() as { status: string } | undefined;
      await until('the API-triggered run to finish', () => (apiRun()?.status ?? 'running') !== 'running');
      expect(apiRun()!.status).toBe('succeeded');
      expect((await call('POST', '/v1/sync/all')).status).toBe(202);
    } finally {
      await mirror.stop();
    }
  });
});
