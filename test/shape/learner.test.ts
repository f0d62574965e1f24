import { describe, expect, it } from 'vitest';
import type { Config } from '../../src/config/config.js';
import { configSchema } from '../../src/config/configSchema.js';
import { listResources } from '../../src/mirror/resources.js';
import { ShapeLearner } from '../../src/mirror/shape/learner.js';
import type { ShapePolicy } from '../../src/mirror/shape/policy.js';
import { keyFormat, type StoredShape } from '../../src/mirror/shape/shapeTypes.js';

/** The pure learner (src/mirror/shape/learner.ts): what it learns, reports and decides per record. */

// Only the operator's paths are read: the parsed defaults stand in for a loaded config.
const projects = listResources(configSchema.parse({}) as Config).projects;
const T0 = '2026-11-27T00:00:00.000Z';
const T1 = '2026-11-27T01:00:00.000Z';
const T2 = '2026-11-27T02:00:00.000Z';

const policy = (over: Partial<ShapePolicy> = {}): ShapePolicy => ({
  onTypeChange: 'quarantine',
  onNewValue: 'store',
  enumFields: new Set(['projectStatus']),
  ...over,
});

const record = (id: number, extra: Record<string, unknown> = {}) => ({
  projectID: id,
  projectName: `p${id}`,
  projectStatus: 'Listed',
  totalEstimatedUnits: 100,
  ...extra,
});

/** A learner past its baseline: one complete scan of `records` learned, then a new run. */
function learned(records: object[], p = policy()): ShapeLearner {
  const first = new ShapeLearner(projects, p, { fields: [], changes: [] }, T0);
  for (const r of records) first.observe(r, String((r as { projectID: number }).projectID));
  first.complete(T0);
  const stored: StoredShape = { fields: first.drain().fields, changes: [] };
  return new ShapeLearner(projects, p, stored, T1);
}

describe('the shape learner', () => {
  it('learns the first complete scan silently, with per-field counts', () => {
    const l = new ShapeLearner(projects, policy(), { fields: [], changes: [] }, T0);
    for (let i = 1; i <= 4; i++) l.observe(record(i, i === 4 ? { projectName: null } : {}), String(i));
    l.observe(record(5, { extra: 'x', projectStatus: 'Registered' }), '5');
    l.complete(T0);
    const { fields, changes } = l.drain();
    expect(changes).toEqual([]);
    const byName = new Map(fields.map((f) => [f.field, f]));
    expect(byName.get('projectName')).toMatchObject({ present: 5, nulls: 1, records: 5 });
    expect([...byName.get('projectName')!.types].sort()).toEqual(['null', 'string']);
    expect(byName.get('extra')).toMatchObject({ present: 1, records: 5, admitted: null });
    expect([...byName.get('projectStatus')!.enumValues!].sort()).toEqual(['Listed', 'Registered']);
    expect([...byName.get('projectID')!.keyFormats!]).toEqual(['integer']);
    expect([...byName.get('totalEstimatedUnits')!.admitted!]).toEqual(['number']);
  });

  it('reports a new field once, counting every record that has it, and takes the record', () => {
    const l = learned([record(1), record(2)]);
    expect(l.observe(record(3, { newField: 1 }), '3')).toBeUndefined();
    expect(l.observe(record(4, { newField: 2 }), '4')).toBeUndefined();
    const { changes } = l.drain();
    expect(changes).toHaveLength(1);
    expect(changes[0]).toMatchObject({
      field: 'newField',
      kind: 'field-added',
      after: 'number',
      mapped: false,
      exampleKey: '3',
      count: 2,
    });
  });

  it('quarantines a mapped field that changes type (the default), once reported', () => {
    const l = learned([record(1), record(2)]);
    const verdict = l.observe(record(3, { totalEstimatedUnits: '12' }), '3');
    expect(verdict).toEqual({
      kind: 'quarantine',
      reason: expect.stringMatching(/^schema: totalEstimatedUnits is string/),
    });
    expect(l.observe(record(4, { totalEstimatedUnits: '13' }), '4')?.kind).toBe('quarantine');
    // The same type again in the same signature, and a null (always admitted): one change, two records.
    expect(l.observe(record(5, { totalEstimatedUnits: null }), '5')).toBeUndefined();
    const { changes } = l.drain();
    expect(changes).toEqual([
      expect.objectContaining({
        field: 'totalEstimatedUnits',
        kind: 'type-changed',
        before: 'number',
        after: 'string',
        mapped: true,
        count: 2,
      }),
    ]);
    expect(l.failure).toBeNull();
  });

  it('leaves the column null under "store", and fails the run under "fail"', () => {
    const store = learned([record(1)], policy({ onTypeChange: 'store' }));
    expect(store.observe(record(2, { totalEstimatedUnits: { value: 1 } }), '2')).toEqual({
      kind: 'null-columns',
      fields: ['totalEstimatedUnits'],
    });
    const fail = learned([record(1)], policy({ onTypeChange: 'fail' }));
    expect(fail.failure).toBeNull();
    fail.observe(record(2, { totalEstimatedUnits: '1' }), '2');
    expect(fail.failure).toMatch(/totalEstimatedUnits changed type to string in record 2/);
  });

  it('evolves an unmapped field: its new type is reported once, then learned', () => {
    const l = learned([record(1, { note: 'a' })]);
    expect(l.observe(record(2, { note: 7 }), '2')).toBeUndefined();
    expect(l.observe(record(3, { note: 8 }), '3')).toBeUndefined();
    const { changes, fields } = l.drain();
    expect(changes).toEqual([
      expect.objectContaining({
        field: 'note',
        kind: 'type-changed',
        before: 'string',
        after: 'number',
        mapped: false,
        count: 2,
      }),
    ]);
    expect([...fields.find((f) => f.field === 'note')!.types].sort()).toEqual(['number', 'string']);
  });

  it('stores a new enum value and reports it once, or quarantines it when told to', () => {
    const l = learned([record(1)]);
    expect(l.observe(record(2, { projectStatus: 'Suspended' }), '2')).toBeUndefined();
    expect(l.observe(record(3, { projectStatus: 'Suspended' }), '3')).toBeUndefined();
    expect(l.drain().changes).toEqual([
      expect.objectContaining({ field: 'projectStatus', kind: 'new-value', after: 'Suspended', count: 2 }),
    ]);
    const strict = learned([record(1)], policy({ onNewValue: 'quarantine' }));
    expect(strict.observe(record(2, { projectStatus: 'Suspended' }), '2')?.kind).toBe('quarantine');
    // Not learned while quarantined: the next record with it is quarantined too.
    expect(strict.observe(record(3, { projectStatus: 'Suspended' }), '3')?.kind).toBe('quarantine');
    expect(strict.observe(record(4), '4')).toBeUndefined();
  });

  it('reports a new key format, never quarantining for it', () => {
    expect([
      keyFormat('123'),
      keyFormat('P-1'),
      keyFormat('0b0f1a52-9a43-4c8e-8e0e-5f7f2b0c1d2e'),
      keyFormat(''),
    ]).toEqual(['integer', 'text', 'uuid', 'text']);
    const l = learned([record(1), record(2)]);
    expect(l.observe(record(3, { projectID: 'P-3' }), 'P-3')).toBeUndefined();
    // Its JSON type changed too: reported, but a key is text either way, so the record is taken.
    expect(l.drain().changes).toEqual([
      expect.objectContaining({
        field: 'projectID',
        kind: 'type-changed',
        before: 'number',
        after: 'string',
        count: 1,
      }),
      expect.objectContaining({
        field: 'projectID',
        kind: 'key-format-changed',
        before: 'integer',
        after: 'text',
        count: 1,
      }),
    ]);
  });

  it('decides a vanished field only when a complete scan ends, from the fields seen since it began', () => {
    const l = learned([record(1, { gone: 1 }), record(2, { gone: 2 })]);
    l.observe(record(3), '3');
    // Nothing until the scan completes.
    expect(l.drain().changes).toEqual([]);
    l.at = T2;
    l.complete(T1);
    const { changes, fields } = l.drain();
    expect(changes).toEqual([
      expect.objectContaining({ field: 'gone', kind: 'field-removed', after: 'absent', before: 'number' }),
    ]);
    expect(fields.find((f) => f.field === 'gone')!.removedAt).toBe(T2);
    // Seen in an earlier part of the same scan (a resumed run): last seen after the scan began, kept.
    const resumed = learned([record(1, { kept: 1 })]);
    resumed.complete(T0);
    expect(resumed.drain().changes).toEqual([]);
  });

  it('admits what was seen when the mapping of a field changes (a release maps it anew)', () => {
    const l = learned([record(1)]);
    l.observe(record(2, { totalEstimatedUnits: 'x' }), '2');
    const fields = l.drain().fields.map((f) => ({ ...f, mappedAs: 'text' }));
    const again = new ShapeLearner(projects, policy(), { fields, changes: [] }, T2);
    expect(again.observe(record(3, { totalEstimatedUnits: 'y' }), '3')).toBeUndefined();
  });

  it('knows the changes earlier runs recorded: seen again, they are counted, not recorded anew', () => {
    const l = learned([record(1)]);
    l.observe(record(2, { newField: 1 }), '2');
    const { changes, fields } = l.drain();
    const next = new ShapeLearner(projects, policy(), { fields, changes: [{ ...changes[0]!, id: 7 }] }, T2);
    next.observe(record(3, { newField: 2 }), '3');
    expect(next.drain().changes).toEqual([expect.objectContaining({ id: 7, count: 1 })]);
  });

  it('bounds what an upstream sending random keys can make it hold', () => {
    const l = learned([record(1)]);
    for (let i = 0; i < 2_000; i++) l.observe(record(10 + i, { [`k${i}`]: i }), String(10 + i));
    expect(l.drain().fields.length).toBeLessThanOrEqual(500);
  });
});
