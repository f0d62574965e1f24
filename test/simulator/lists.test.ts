import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Simulator, startSimulator } from '../../src/simulator/index.js';
import { get, getArray, KEY, post } from './helpers.js';

describe('public lists over HTTP', () => {
  let sim: Simulator;
  beforeAll(async () => {
    sim = await startSimulator({
      seed: 5,
      projects: 37,
      issuances: 250,
      units: 2345,
      maxPageSize: 100,
      defaultPageSize: 10,
    });
  });
  afterAll(() => sim.close());

  it('paging covers every record exactly once, in the registry order', async () => {
    for (const [resource, idField] of [
      ['projects', 'projectID'],
      ['issuances', 'issuanceId'],
      ['units', 'unitsOperationID'],
    ] as const) {
      const seen: unknown[] = [];
      for (let offset = 0; ; offset += 100) {
        const page = await getArray(sim, `/integration/v1/${resource}?limit=100&offset=${offset}`);
        seen.push(...page.map((r) => r[idField]));
        if (page.length < 100) break;
      }
      const expected = [...sim.registry.iterate(resource)].map((r) => r[idField]);
      expect(seen).toEqual(expected);
      expect(new Set(seen).size).toBe(sim.registry.count(resource));
    }
  });

  it('serves records field by field as the registry holds them', async () => {
    const page = await getArray(sim, '/integration/v1/issuances?limit=5&offset=7');
    expect(page).toEqual(sim.registry.page('issuances', 7, 5));
  });

  it('clamps a large limit to maxPageSize and uses the default page size without one', async () => {
    expect(await getArray(sim, '/integration/v1/units?limit=5000')).toHaveLength(100);
    expect(await getArray(sim, '/integration/v1/units')).toHaveLength(10);
    expect(await getArray(sim, '/integration/v1/units?offset=2340&limit=100')).toHaveLength(5);
    expect(await getArray(sim, '/integration/v1/units?offset=999999')).toEqual([]);
  });

  it('rejects bad limit/offset with 400 and a JSON message', async () => {
    for (const q of ['limit=-1', 'limit=abc', 'limit=0', 'offset=-5', 'offset=1.5', 'limit=']) {
      const r = await get(sim, `/integration/v1/projects?${q}`);
      expect(r.status, q).toBe(400);
      expect(r.body).toMatchObject({ message: expect.stringMatching(/limit|offset/) });
    }
  });

  it('filters projects by status and issuances by projectID (exact match), paging within the filter', async () => {
    const listed = [...sim.registry.iterate('projects')].filter((p) => p.projectStatus === 'Listed');
    expect(listed.length).toBeGreaterThan(1);
    const all = await getArray(sim, '/integration/v1/projects?status=Listed&limit=100');
    expect(all.map((p) => p.projectID)).toEqual(listed.map((p) => p.projectID));
    const second = await getArray(sim, '/integration/v1/projects?status=Listed&limit=1&offset=1');
    expect(second[0]?.projectID).toBe(listed[1]?.projectID);
    expect(await getArray(sim, '/integration/v1/projects?status=listed')).toEqual([]);

    const pid = listed[0]?.projectID;
    const mine = [...sim.registry.iterate('issuances')].filter((i) => i.issuanceProjectId === pid);
    const got = await getArray(sim, `/integration/v1/issuances?projectID=${String(pid)}&limit=100`);
    expect(got.map((i) => i.issuanceId)).toEqual(mine.map((i) => i.issuanceId));
  });
});

describe('authentication', () => {
  it("'either' accepts apikey and Bearer; missing → 401, wrong → 403, with JSON messages", async () => {
    const sim = await startSimulator();
    try {
      expect((await get(sim, '/integration/v1/projects', { apikey: KEY })).status).toBe(200);
      expect((await get(sim, '/integration/v1/projects', { authorization: `Bearer ${KEY}` })).status).toBe(
        200,
      );
      const missing = await get(sim, '/integration/v1/projects', {});
      expect(missing.status).toBe(401);
      expect(missing.body).toHaveProperty('message');
      const wrong = await get(sim, '/integration/v1/units', { apikey: 'nope' });
      expect(wrong.status).toBe(403);
      expect(wrong.body).toHaveProperty('message');
      expect((await get(sim, '/integration/v1/projects/1000', {})).status).toBe(401);
    } finally {
      await sim.close();
    }
  });

  it("'apikey' mode ignores a Bearer header and 'bearer' mode ignores apikey", async () => {
    const a = await startSimulator({ auth: 'apikey', apiKey: 'k1' });
    const b = await startSimulator({ auth: 'bearer', apiKey: 'k2' });
    try {
      expect((await get(a, '/integration/v1/projects', { authorization: 'Bearer k1' })).status).toBe(401);
      expect((await get(a, '/integration/v1/projects', { apikey: 'k1' })).status).toBe(200);
      expect((await get(b, '/integration/v1/projects', { apikey: 'k2' })).status).toBe(401);
      expect((await get(b, '/integration/v1/projects', { authorization: 'Bearer k2' })).status).toBe(200);
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('rotating the key via /_sim/auth makes the old key 403 until the client uses the new one', async () => {
    const sim = await startSimulator();
    try {
      expect((await post(sim, '/_sim/auth', { apiKey: 'rotated' })).status).toBe(200);
      expect((await get(sim, '/integration/v1/projects')).status).toBe(403);
      expect((await get(sim, '/integration/v1/projects', { apikey: 'rotated' })).status).toBe(200);
    } finally {
      await sim.close();
    }
  });
});

describe('Marketplace Data reads (custody only)', () => {
  it('serves project, issuance and units data for ids in custody, 404 JSON otherwise', async () => {
    const sim = await startSimulator({
      custody: { projects: [1004], issuances: ['100008'], units: ['1000000012'] },
    });
    try {
      const p = await get(sim, '/integration/v1/projects/1004');
      expect(p.status).toBe(200);
      expect(p.body).toEqual(sim.registry.get('projects', 1004));
      expect((await get(sim, '/integration/v1/issuances/100008')).body).toEqual(
        sim.registry.get('issuances', '100008'),
      );
      expect((await get(sim, '/integration/v1/units/1000000012')).body).toEqual(
        sim.registry.get('units', '1000000012'),
      );

      const out = await get(sim, '/integration/v1/projects/1000'); // exists, not in custody
      expect(out.status).toBe(404);
      expect(out.body).toHaveProperty('message');
      expect((await get(sim, '/integration/v1/issuances/100000')).status).toBe(404);
      expect((await get(sim, '/integration/v1/units/abc')).status).toBe(404);

      sim.registry.remove('projects', 1004); // custody of a record the registry no longer has
      expect((await get(sim, '/integration/v1/projects/1004')).status).toBe(404);
    } finally {
      await sim.close();
    }
  });

  it('defaults custody to the first 3 projects, 5 issuances and 10 units, and honours custom data paths', async () => {
    const sim = await startSimulator({ issuanceDataPath: '/integration/v1/issuance-data/{id}' });
    try {
      expect((await get(sim, '/integration/v1/projects/1008')).status).toBe(200);
      expect((await get(sim, '/integration/v1/projects/1012')).status).toBe(404);
      expect((await get(sim, '/integration/v1/issuance-data/100016')).status).toBe(200);
      expect((await get(sim, '/integration/v1/issuance-data/100020')).status).toBe(404);
      expect((await get(sim, '/integration/v1/units/1000000036')).status).toBe(200);
      expect((await get(sim, '/integration/v1/units/1000000040')).status).toBe(404);
    } finally {
      await sim.close();
    }
  });
});

describe('unpaginated mode', () => {
  it('GET /units ignores limit/offset and returns every record in one streamed body', async () => {
    const sim = await startSimulator({ units: 20_000, unitsUnpaginated: true, maxPageSize: 100 });
    try {
      const res = await fetch(`${sim.url}/integration/v1/units?limit=10&offset=500`, {
        headers: { apikey: KEY },
      });
      expect(res.headers.get('content-length')).toBeNull(); // streamed in chunks, not one string
      const all = (await res.json()) as Record<string, unknown>[];
      expect(all).toHaveLength(20_000);
      expect(all[0]).toEqual(sim.registry.page('units', 0, 1)[0]);
      expect(all.at(-1)?.unitsOperationID).toBe(String(1_000_000_000 + 4 * 19_999));
      // Projects still page.
      expect(await getArray(sim, '/integration/v1/projects?limit=3')).toHaveLength(3);
    } finally {
      await sim.close();
    }
  });

  it('projectsUnpaginated does the same for projects, with the status filter applied', async () => {
    const sim = await startSimulator({ projects: 150, projectsUnpaginated: true });
    try {
      expect(await getArray(sim, '/integration/v1/projects?limit=1')).toHaveLength(150);
      const listed = await getArray(sim, '/integration/v1/projects?status=Listed');
      expect(listed.length).toBeGreaterThan(0);
      expect(listed.every((p) => p.projectStatus === 'Listed')).toBe(true);
    } finally {
      await sim.close();
    }
  });
});

describe('scale over HTTP', () => {
  it('serves offset 999,000 of a 1,000,000-unit registry without building the records', async () => {
    const before = process.memoryUsage().heapUsed;
    const sim = await startSimulator({ units: 1_000_000 });
    try {
      const page = await getArray(sim, '/integration/v1/units?limit=1000&offset=999000');
      expect(page).toHaveLength(1000);
      expect(page[0]?.unitsOperationID).toBe(String(1_000_000_000 + 4 * 999_000));
      expect(page.at(-1)?.unitsOperationID).toBe(String(1_000_000_000 + 4 * 999_999));
      expect(process.memoryUsage().heapUsed - before).toBeLessThan(60 * 1024 * 1024);
    } finally {
      await sim.close();
    }
  });
});
