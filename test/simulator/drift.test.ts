import { afterEach, describe, expect, it } from 'vitest';
import { type Simulator, startSimulator, uuidOfKey } from '../../src/simulator/index.js';
import { get, getArray, post } from './helpers.js';

/**
 * Schema drift on demand: every record served for a resource (its list, its custody read) goes
 * through the drift's changes from now on, or after the next N list requests; the registry's
 * records stay as stored, and clearing the drift serves them as before.
 */

let sim: Simulator | undefined;
afterEach(async () => {
  await sim?.close();
  sim = undefined;
});

const PROJECTS = '/integration/v1/projects';
const ISSUANCES = '/integration/v1/issuances';

async function send(s: Simulator, method: string, path: string, body?: unknown) {
  const res = await fetch(`${s.url}${path}`, {
    method,
    headers: { 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, body: text ? (JSON.parse(text) as unknown) : undefined };
}

describe('drift of the served records', () => {
  it('adds, drops and retypes fields in the list and the custody read; the registry keeps its records', async () => {
    sim = await startSimulator({ projects: 6, issuances: 6 });
    const before = await getArray(sim, PROJECTS);
    sim.registry.drift({
      resource: 'projects',
      changes: [
        { kind: 'add-field', field: 'projectRating', value: 'AA' },
        { kind: 'add-field', field: 'projectCode', valueFrom: 'key' },
        { kind: 'drop-field', field: 'projectTags' },
        { kind: 'change-type', field: 'totalEstimatedUnits', to: 'string' },
        { kind: 'change-type', field: 'projectCountry', to: 'object' },
      ],
    });
    const after = await getArray(sim, PROJECTS);
    expect(after).toHaveLength(before.length);
    after.forEach((p, i) => {
      const old = before[i]!;
      const { projectTags: _dropped, ...kept } = old;
      expect(p).toEqual({
        ...kept,
        projectRating: 'AA',
        projectCode: String(old.projectID),
        totalEstimatedUnits: String(old.totalEstimatedUnits),
        projectCountry: { value: old.projectCountry },
      });
      expect('projectTags' in p).toBe(false);
    });
    // The custody read serves the same drifted record; the registry's own is as stored.
    const id = String(before[0]!.projectID);
    expect((await get(sim, `${PROJECTS}/${id}`)).body).toEqual(after[0]);
    expect(sim.registry.get('projects', id)).toEqual(before[0]);
    expect(sim.registry.servedSnapshot('projects').get(id)).toEqual(after[0]);

    // Other resources are not touched; clearing serves the stored shape again.
    const issuances = await getArray(sim, ISSUANCES);
    expect(issuances[0]).toEqual(sim.registry.get('issuances', String(issuances[0]!.issuanceId)));
    sim.registry.clearDrift('projects');
    expect(await getArray(sim, PROJECTS)).toEqual(before);
  });

  it('string to number: a number text becomes the number; other text the record key', async () => {
    sim = await startSimulator({ issuances: 4 });
    const before = await getArray(sim, ISSUANCES);
    sim.registry.drift({
      resource: 'issuances',
      changes: [
        { kind: 'change-type', field: 'issuanceId', to: 'number' },
        { kind: 'change-type', field: 'issuanceBlockchainNetwork', to: 'number' },
      ],
    });
    const after = await getArray(sim, ISSUANCES);
    after.forEach((r, i) => {
      expect(r.issuanceId).toBe(Number(before[i]!.issuanceId));
      expect(r.issuanceBlockchainNetwork).toBe(Number(before[i]!.issuanceId));
    });
  });

  it('a new enum value on a share of the records: the same records on every request, all of them at share 1', async () => {
    sim = await startSimulator({ projects: 200 });
    sim.registry.drift({
      resource: 'projects',
      changes: [{ kind: 'new-value', field: 'projectStatus', value: 'Suspended', share: 0.25 }],
    });
    const suspended = async () =>
      (await getArray(sim!, `${PROJECTS}?limit=1000`))
        .filter((p) => p.projectStatus === 'Suspended')
        .map((p) => p.projectID);
    const first = await suspended();
    expect(first.length).toBeGreaterThan(20);
    expect(first.length).toBeLessThan(80);
    expect(await suspended()).toEqual(first);
    // The list's status filter sees what is served.
    const filtered = await getArray(sim, `${PROJECTS}?status=Suspended&limit=1000`);
    expect(filtered.map((p) => p.projectID)).toEqual(first);

    sim.registry.clearDrift();
    sim.registry.drift({
      resource: 'projects',
      changes: [{ kind: 'new-value', field: 'projectStatus', value: 'Suspended' }],
    });
    expect(await suspended()).toHaveLength(200);
  });

  it('key format: "P-<n>" or a UUID per record, stable; the custody read answers the new id and the old', async () => {
    sim = await startSimulator({ projects: 5, issuances: 5 });
    sim.registry.drift({ resource: 'projects', changes: [{ kind: 'key-format', format: 'prefixed' }] });
    const projects = await getArray(sim, PROJECTS);
    expect(projects.map((p) => p.projectID)).toEqual(['P-1000', 'P-1004', 'P-1008', 'P-1012', 'P-1016']);
    expect(((await get(sim, `${PROJECTS}/P-1004`)).body as { projectID: string }).projectID).toBe('P-1004');
    expect(((await get(sim, `${PROJECTS}/1004`)).body as { projectID: string }).projectID).toBe('P-1004');
    expect((await get(sim, `${PROJECTS}/P-1016`)).status).toBe(404); // not in custody

    sim.registry.drift({ resource: 'issuances', changes: [{ kind: 'key-format', format: 'uuid' }] });
    const ids = (await getArray(sim, ISSUANCES)).map((r) => String(r.issuanceId));
    expect(new Set(ids).size).toBe(5);
    for (const id of ids)
      expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect((await getArray(sim, ISSUANCES)).map((r) => r.issuanceId)).toEqual(ids);
    expect(ids[0]).toBe(uuidOfKey('issuances', 100_000));
    const read = await get(sim, `${ISSUANCES}/${ids[1]}`);
    expect(read.status).toBe(200);
    expect((read.body as { issuanceId: string }).issuanceId).toBe(ids[1]);
  });

  it('mid-run: after the next 2 list requests; page 1 and 2 old, page 3 new; the custody read waits too', async () => {
    sim = await startSimulator({ projects: 30 });
    const view = sim.registry.drift({
      resource: 'projects',
      changes: [{ kind: 'add-field', field: 'projectRating', value: 'AA' }],
      afterRequests: 2,
    });
    expect(view).toMatchObject({ afterRequests: 2, active: false });
    // Another resource's requests and custody reads do not count.
    await getArray(sim, '/integration/v1/issuances?limit=5');
    expect((await get(sim, `${PROJECTS}/1000`)).body as object).not.toHaveProperty('projectRating');
    const page = async (n: number) => getArray(sim!, `${PROJECTS}?limit=10&offset=${n * 10}`);
    expect((await page(0)).some((p) => 'projectRating' in p)).toBe(false);
    expect(sim.registry.drifts.list()[0]).toMatchObject({ afterRequests: 1, active: false });
    expect((await page(1)).some((p) => 'projectRating' in p)).toBe(false);
    expect((await page(2)).every((p) => p.projectRating === 'AA')).toBe(true);
    expect((await page(0)).every((p) => p.projectRating === 'AA')).toBe(true);
    expect((await get(sim, `${PROJECTS}/1000`)).body as object).toHaveProperty('projectRating', 'AA');
  });

  it('an unpaginated list streams the drifted records', async () => {
    sim = await startSimulator({ projects: 40, projectsUnpaginated: true });
    sim.registry.drift({ resource: 'projects', changes: [{ kind: 'drop-field', field: 'projectName' }] });
    const all = await getArray(sim, PROJECTS);
    expect(all).toHaveLength(40);
    expect(all.some((p) => 'projectName' in p)).toBe(false);
  });
});

describe('/_sim/drift', () => {
  it('POST adds (201), GET lists with the countdown, DELETE clears one resource or all', async () => {
    sim = await startSimulator({ projects: 5, issuances: 5 });
    const added = await send(sim, 'POST', '/_sim/drift', {
      resource: 'projects',
      changes: [{ kind: 'new-value', field: 'projectStatus', value: 'Suspended' }],
      afterRequests: 1,
    });
    expect(added.status).toBe(201);
    expect(added.body).toMatchObject({ id: 1, resource: 'projects', afterRequests: 1, active: false });
    await send(sim, 'POST', '/_sim/drift', {
      resource: 'issuances',
      changes: [{ kind: 'drop-field', field: 'issuanceAmount' }],
    });
    await getArray(sim, PROJECTS);
    expect((await send(sim, 'GET', '/_sim/drift')).body).toEqual({
      drifts: [
        {
          id: 1,
          resource: 'projects',
          changes: [{ kind: 'new-value', field: 'projectStatus', value: 'Suspended' }],
          afterRequests: 0,
          active: true,
        },
        {
          id: 2,
          resource: 'issuances',
          changes: [{ kind: 'drop-field', field: 'issuanceAmount' }],
          afterRequests: 0,
          active: true,
        },
      ],
    });
    expect((await getArray(sim, PROJECTS)).every((p) => p.projectStatus === 'Suspended')).toBe(true);

    expect((await send(sim, 'DELETE', '/_sim/drift?resource=widgets')).status).toBe(400);
    expect((await send(sim, 'DELETE', '/_sim/drift?resource=projects')).status).toBe(204);
    expect((await getArray(sim, PROJECTS)).some((p) => p.projectStatus === 'Suspended')).toBe(false);
    expect((await getArray(sim, ISSUANCES)).some((r) => 'issuanceAmount' in r)).toBe(false);
    expect((await send(sim, 'DELETE', '/_sim/drift')).status).toBe(204);
    expect((await send(sim, 'GET', '/_sim/drift')).body).toEqual({ drifts: [] });
    expect((await getArray(sim, ISSUANCES)).every((r) => 'issuanceAmount' in r)).toBe(true);
  });

  it('a bad body is a 400 naming what is wrong, and changes nothing', async () => {
    sim = await startSimulator({ projects: 3 });
    const bad: [unknown, RegExp][] = [
      [undefined, /expected object/i],
      [{ resource: 'widgets', changes: [{ kind: 'drop-field', field: 'x' }] }, /resource/],
      [{ resource: 'projects', changes: [] }, /changes/],
      [{ resource: 'projects', changes: [{ kind: 'rename', field: 'x' }] }, /kind/],
      [
        {
          resource: 'projects',
          changes: [{ kind: 'new-value', field: 'projectStatus', value: 'S', share: 2 }],
        },
        /share/,
      ],
      [{ resource: 'projects', changes: [{ kind: 'change-type', field: 'x', to: 'date' }] }, /to/],
      [
        { resource: 'projects', changes: [{ kind: 'drop-field', field: 'x' }], afterRequests: -1 },
        /afterRequests/,
      ],
      [{ resource: 'projects', changes: [{ kind: 'drop-field', field: 'x' }], extra: 1 }, /extra/],
    ];
    for (const [body, message] of bad) {
      const r = await post(sim, '/_sim/drift', body === undefined ? 'not json' : body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect((r.body as { message: string }).message).toMatch(message);
    }
    expect(sim.registry.drifts.list()).toEqual([]);
    expect(() =>
      sim!.registry.drift({ resource: 'projects', changes: [{ kind: 'drop-field', field: '' }] }),
    ).toThrow(expect.objectContaining({ name: 'RegistryError', code: 'invalid' }));
  });
});
