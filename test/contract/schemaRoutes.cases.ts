import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ManualClock } from '../../src/common/clock.js';
import type { AppContext } from '../../src/context.js';
import type { ChangeView, FieldView, SchemaAnswer } from '../../src/mirror/shape/shapeReads.js';
import { runSync } from '../../src/mirror/syncRun.js';
import type { Simulator } from '../../src/simulator/index.js';
import { testContext } from '../helpers/context.js';
import type { ApiAnswer, apiCaller } from '../helpers/http.js';
import { noSleep } from '../mirror/harness.js';
import type { MirrorUnderTest } from './mirrorStores.js';

/**
 * `GET /v1/schema`, the same requests on SQLite (schemaRoutes.sqlite.test.ts) and PostgreSQL
 * (schemaRoutes.pg.test.ts): the simulator's registry synced into the store, then drifted (a new
 * field, a new status, a number sent as text, a new field on a unit) and synced again a day later;
 * the API on the store's reads is asked for the shape and its changes, whole and filtered, and
 * refuses what it must. PostgreSQL's half syncs a SQLite mirror beside it (the same runs, the same
 * clock) whose API must answer the same bytes.
 */

export const TOKEN = 'schema-api-token-0123456789';
const DAY = 86_400_000;
/** The first sync's day (the clock starts here), and the drift's, a day later. */
export const FIRST_DAY = '2026-03-01';
export const DRIFT_DAY = '2026-03-02';

export type Call = ReturnType<typeof apiCaller>;

/** The context both stores' syncs and APIs run in: the simulator as the operator, small pages. */
export function schemaContext(sim: Simulator, clock: ManualClock) {
  return testContext({
    clock,
    overrides: {
      'operator.url': sim.url,
      'operator.api_key': 'sim-api-key',
      'operator.rate_per_second': 100_000,
      'sync.page_size': 20,
      'api.listen': '127.0.0.1:0',
      'api.token': TOKEN,
    },
  });
}

/** The keys of the records the drift touched. */
export interface Drift {
  newField: string;
  newStatus: string;
  textNumber: string;
  unit: string;
}

/**
 * Syncs projects and units into each mirror (the same runs, the same clock), then, a day later,
 * drifts four records and syncs again: the changes the API then lists.
 */
export async function seedShape(
  sim: Simulator,
  ctx: AppContext,
  clock: ManualClock,
  mirrors: readonly MirrorUnderTest[],
): Promise<Drift> {
  const syncEach = async () => {
    for (const target of ['projects', 'units'] as const)
      for (const m of mirrors) {
        const outcome = await runSync(ctx, target, { sleep: noSleep, backend: m.backend });
        expect(outcome.status, `${m.kind} ${target}`).toBe('succeeded');
      }
  };
  await syncEach();

  clock.advance(DAY);
  const reg = sim.registry;
  const projects = [...reg.snapshot('projects').keys()];
  reg.change('projects', projects[0]!, { newField: 'x' });
  reg.change('projects', projects[1]!, { projectStatus: 'Suspended' });
  reg.change('projects', projects[2]!, { totalEstimatedUnits: '12' });
  // A new unit, so the incremental units sync reads it, carrying a field never seen.
  const { lastId } = reg.appendUnits(1);
  reg.change('units', lastId!, { unitsNote: 'hand-written' });
  await syncEach();
  return { newField: projects[0]!, newStatus: projects[1]!, textNumber: projects[2]!, unit: lastId! };
}

/** The API on the store under test, with the drift it holds. */
export interface SchemaUnderTest {
  drift: Drift;
  call: Call;
  /** An API on another store's mirror of the same registry, which must answer the same bytes. */
  reference?: Call;
  close(): Promise<void>;
}

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

/** The answer of a 200, typed. */
function answerOf(res: ApiAnswer): SchemaAnswer {
  expect(res.status, res.text).toBe(200);
  return res.json as SchemaAnswer;
}

const fieldOf = (a: SchemaAnswer, resource: string, field: string): FieldView | undefined =>
  a.fields.find((f) => f.resource === resource && f.field === field);
const changeOf = (a: SchemaAnswer, field: string): ChangeView | undefined =>
  a.changes.find((c) => c.field === field);

/** Registers the requests on the API over `mirror`; `open` syncs it and serves it. */
export function schemaRoutesCases(mirror: string, open: () => Promise<SchemaUnderTest>): void {
  describe(`GET /v1/schema over ${mirror}`, () => {
    let api: SchemaUnderTest;
    /** Asks the store under test and, when there is one, the reference: the same status and bytes. */
    const ask = async (path: string, token?: string | null): Promise<ApiAnswer> => {
      const res = await api.call('GET', path, undefined, token);
      if (api.reference) {
        const ref = await api.reference('GET', path, undefined, token);
        expect({ status: res.status, text: res.text }).toEqual({ status: ref.status, text: ref.text });
      }
      return res;
    };

    beforeAll(async () => {
      api = await open();
    });
    afterAll(async () => {
      await api?.close();
    });

    it('lists every field learned and the changes, newest first, each as it happened', async () => {
      const a = answerOf(await ask('/v1/schema'));
      expect(new Set(a.fields.map((f) => f.resource))).toEqual(new Set(['projects', 'unit_operations']));
      const keys = a.fields.map((f) => `${f.resource} ${f.field}`);
      expect(keys).toEqual([...keys].sort());

      expect(a.changes.map((c) => [c.resource, c.field, c.kind])).toEqual([
        ['unit_operations', 'unitsNote', 'field-added'],
        ['projects', 'totalEstimatedUnits', 'type-changed'],
        ['projects', 'projectStatus', 'new-value'],
        ['projects', 'newField', 'field-added'],
      ]);
      const ids = a.changes.map((c) => c.id);
      expect(ids).toEqual([...ids].sort((x, y) => y - x));
      expect(changeOf(a, 'newField')).toEqual({
        id: expect.any(Number),
        resource: 'projects',
        field: 'newField',
        kind: 'field-added',
        before: null,
        after: 'string',
        mapped: false,
        firstSeenAt: `${DRIFT_DAY}T00:00:00.000Z`,
        lastSeenAt: `${DRIFT_DAY}T00:00:00.000Z`,
        exampleKey: api.drift.newField,
        count: 1,
        runId: expect.any(Number),
      });
      expect(changeOf(a, 'projectStatus')).toMatchObject({
        kind: 'new-value',
        before: null,
        after: 'Suspended',
        mapped: true,
        exampleKey: api.drift.newStatus,
      });
      expect(changeOf(a, 'totalEstimatedUnits')).toMatchObject({
        kind: 'type-changed',
        before: 'number',
        after: 'string',
        mapped: true,
        exampleKey: api.drift.textNumber,
      });
      expect(changeOf(a, 'unitsNote')).toMatchObject({ mapped: false, exampleKey: api.drift.unit });
    });

    it('shows each field with its types, its column, its null and absent counts and an enum field values', async () => {
      const a = answerOf(await ask('/v1/schema?resource=projects'));
      const added = fieldOf(a, 'projects', 'newField')!;
      expect(added).toMatchObject({ types: ['string'], admitted: null, mapped: false, values: null });
      expect(added.present).toBe(1);
      expect(added.absent).toBe(added.records - 1);
      expect(added.records).toBeGreaterThan(1);
      const status = fieldOf(a, 'projects', 'projectStatus')!;
      expect(status.mapped).toBe(true);
      expect(status.values).toContain('Suspended');
      expect(status.values).toEqual([...status.values!].sort());
      expect(status).toMatchObject({ absent: 0, nulls: 0, removedAt: null });
      const key = fieldOf(a, 'projects', 'projectID')!;
      expect(key.keyFormats).toEqual(['integer']);
      for (const f of a.fields) {
        expect(f.firstSeenAt).toMatch(ISO);
        expect(f.lastSeenAt).toMatch(ISO);
        expect(f.present + f.absent).toBe(f.records);
      }
      expect(fieldOf(a, 'projects', 'projectName')!.firstSeenAt).toBe(`${FIRST_DAY}T00:00:00.000Z`);
    });

    it('filters by table, and takes the sync name units for unit_operations', async () => {
      const projects = answerOf(await ask('/v1/schema?resource=projects'));
      expect(projects.fields.length).toBeGreaterThan(5);
      expect(projects.fields.every((f) => f.resource === 'projects')).toBe(true);
      expect(projects.changes.map((c) => c.field)).toEqual([
        'totalEstimatedUnits',
        'projectStatus',
        'newField',
      ]);
      // The number sent as text is held back (the default policy), listed with its reason.
      expect(projects.quarantined.counts).toEqual({ projects: 1 });
      expect(projects.quarantined.records).toEqual([
        expect.objectContaining({
          resource: 'projects',
          key: String(projects.changes[0]!.exampleKey),
          reason: expect.stringMatching(/^schema: totalEstimatedUnits is string/),
        }),
      ]);
      const units = await ask('/v1/schema?resource=units');
      const table = await ask('/v1/schema?resource=unit_operations');
      expect(units.text).toBe(table.text);
      const u = answerOf(units);
      expect(u.fields.every((f) => f.resource === 'unit_operations')).toBe(true);
      expect(u.changes.map((c) => c.field)).toEqual(['unitsNote']);
      const custody = answerOf(await ask('/v1/schema?resource=custody_units'));
      expect(custody).toEqual({ fields: [], changes: [], quarantined: { counts: {}, records: [] } });
    });

    it('since keeps the changes first seen at or after it, as a date or a date-time with its zone', async () => {
      const all = answerOf(await ask('/v1/schema')).changes.length;
      expect(answerOf(await ask(`/v1/schema?since=${FIRST_DAY}`)).changes).toHaveLength(all);
      expect(answerOf(await ask(`/v1/schema?since=${DRIFT_DAY}`)).changes).toHaveLength(all);
      expect(answerOf(await ask(`/v1/schema?since=${DRIFT_DAY}T00:00:00.001Z`)).changes).toEqual([]);
      // 01:00 at +01:00 is midnight UTC: the drift's instant, included.
      const offset = encodeURIComponent(`${DRIFT_DAY}T01:00:00+01:00`);
      expect(answerOf(await ask(`/v1/schema?since=${offset}`)).changes).toHaveLength(all);
      // The fields are all listed whatever since says.
      const later = answerOf(await ask('/v1/schema?since=2030-01-01'));
      expect(later.changes).toEqual([]);
      expect(later.fields.length).toBe(answerOf(await ask('/v1/schema')).fields.length);
    });

    it('limit keeps the newest changes', async () => {
      const one = answerOf(await ask('/v1/schema?limit=1'));
      expect(one.changes.map((c) => c.field)).toEqual(['unitsNote']);
      const two = answerOf(await ask('/v1/schema?resource=projects&limit=2&since=2026-03-02'));
      expect(two.changes.map((c) => c.field)).toEqual(['totalEstimatedUnits', 'projectStatus']);
      expect(answerOf(await ask('/v1/schema?limit=1000')).changes).toHaveLength(4);
    });

    it.each([
      [
        'an unknown resource',
        '/v1/schema?resource=widgets',
        /^resource: expected one of projects, issuances, unit_operations, custody_projects, custody_issuances, custody_units \(or units, for unit_operations\)$/,
      ],
      ['custody (a sync name of three tables)', '/v1/schema?resource=custody', /^resource: expected one of /],
      ['a since that is no date', '/v1/schema?since=yesterday', /^since: expected an ISO date-time/],
      ['a day not in the calendar', '/v1/schema?since=2026-02-30', /^since: /],
      ['a time without its zone', '/v1/schema?since=2026-03-02T10:00:00', /^since: /],
      ['an hour past 23', `/v1/schema?since=${encodeURIComponent('2026-03-02T24:30:00Z')}`, /^since: /],
      ['limit 0', '/v1/schema?limit=0', /^limit: /],
      ['limit over 1000', '/v1/schema?limit=1001', /^limit: /],
      ['an unknown parameter', '/v1/schema?table=projects', /^unknown parameter table$/],
    ])('%s is refused with 400 naming it', async (_what, path, message) => {
      const res = await ask(path);
      expect(res.status).toBe(400);
      expect(res.json.error).toMatch(message);
    });

    it('answers 401 without the token or with a wrong one', async () => {
      for (const token of [null, 'wrong-token-0123456789']) {
        const res = await ask('/v1/schema', token);
        expect(res.status).toBe(401);
        expect(res.json.fields).toBeUndefined();
      }
    });
  });
}
