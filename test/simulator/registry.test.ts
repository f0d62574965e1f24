import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { KEY_SPECS, Registry } from '../../src/simulator/index.js';
import { OverlaySequence } from '../../src/simulator/sequence.js';

describe('registry: deterministic generation', () => {
  it('the same seed gives identical records, another seed different ones', () => {
    const a = new Registry({ seed: 7 });
    const b = new Registry({ seed: 7 });
    const c = new Registry({ seed: 8 });
    for (const r of ['projects', 'issuances', 'units'] as const) {
      expect([...a.iterate(r)]).toEqual([...b.iterate(r)]);
      expect([...a.iterate(r)]).not.toEqual([...c.iterate(r)]);
    }
  });

  it('records have the interface field names and JSON types', () => {
    const reg = new Registry({ seed: 3 });
    const p = [...reg.iterate('projects')][0];
    const i = [...reg.iterate('issuances')][0];
    const u = [...reg.iterate('units')][0];
    expect(typeof p?.projectID).toBe('number');
    expect(p?.ProjectStatusDate).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    expect(Array.isArray(p?.cobenefit)).toBe(true);
    expect(typeof p?.isProjectCoveredByNDC).toBe('boolean');
    expect(typeof i?.issuanceId).toBe('string');
    expect(typeof i?.issuanceProjectId).toBe('number');
    expect(i?.issuanceVintageYear).toBeGreaterThanOrEqual(2015);
    expect(i?.issuanceVintageYear).toBeLessThanOrEqual(2025);
    expect(typeof u?.unitsOperationID).toBe('string');
    expect(typeof u?.unitsIssuanceID).toBe('string');
    expect(typeof u?.unitsQuantity).toBe('number');
    expect(Number.isInteger(u?.unitsAccountOriginID)).toBe(true);
  });

  it('issuances reference existing projects and unit operations reference existing issuances', () => {
    const reg = new Registry({ seed: 11, projects: 5, issuances: 40, units: 500 });
    const projects = reg.snapshot('projects');
    const issuances = reg.snapshot('issuances');
    for (const i of issuances.values()) expect(projects.has(String(i.issuanceProjectId))).toBe(true);
    for (const u of reg.iterate('units')) expect(issuances.has(String(u.unitsIssuanceID))).toBe(true);
  });

  it('unit operation ids increase along the log, as strings and as numbers', () => {
    const reg = new Registry({ units: 2000 });
    let prev = '';
    for (const u of reg.iterate('units')) {
      const id = String(u.unitsOperationID);
      expect(id > prev).toBe(true);
      prev = id;
    }
  });
});

describe('registry: overlay mutations', () => {
  it('add, change, remove and append are visible in order and counted', () => {
    const reg = new Registry({ projects: 5 });
    const ids = [...reg.iterate('projects')].map((p) => p.projectID);
    expect(ids).toEqual([1000, 1004, 1008, 1012, 1016]);
    reg.add('projects', { projectID: 1005, projectName: 'Inserted' });
    reg.change('projects', 1008, { projectStatus: 'Withdrawn' });
    reg.remove('projects', 1000);
    expect([...reg.iterate('projects')].map((p) => p.projectID)).toEqual([1004, 1005, 1008, 1012, 1016]);
    expect(reg.get('projects', '1008')?.projectStatus).toBe('Withdrawn');
    expect(reg.get('projects', 1000)).toBeUndefined();
    expect(reg.count('projects')).toBe(5);
    expect(() => reg.add('projects', { projectID: 1004 })).toThrow(/already exists/);
    expect(() => reg.change('projects', 1000, {})).toThrow(/no projects record/);
    expect(() => reg.add('projects', { projectID: 'abc' })).toThrow(/projectID/);
    // A removed record can come back with new content.
    reg.add('projects', { projectID: 1000, projectName: 'Back' });
    expect(reg.page('projects', 0, 1)[0]?.projectName).toBe('Back');
  });

  it('changing a record cannot change its id', () => {
    const reg = new Registry();
    const changed = reg.change('units', '1000000000', { unitsOperationID: '5', unitsStatus: 'Retired' });
    expect(changed.unitsOperationID).toBe('1000000000');
    expect(reg.get('units', '1000000000')?.unitsStatus).toBe('Retired');
  });

  it('appended unit operations come after every existing one, even after a hand-added one', () => {
    const reg = new Registry({ units: 10 });
    const r1 = reg.appendUnits(3);
    expect(reg.count('units')).toBe(13);
    expect(r1.firstId).toBe('1000000040');
    reg.add('units', { unitsOperationID: '1000000999' });
    const r2 = reg.appendUnits(2);
    expect(r2).toEqual({ count: 2, firstId: '1000001000', lastId: '1000001001' });
    const all = [...reg.iterate('units')].map((u) => Number(u.unitsOperationID));
    expect(all).toEqual([...all].sort((a, b) => a - b));
    expect(all.at(-1)).toBe(1000001001);
  });

  it('removing before an offset shifts later offsets down; inserting shifts them up', () => {
    const reg = new Registry({ projects: 10 });
    const atFive = reg.page('projects', 5, 1)[0]?.projectID;
    reg.removeBefore('projects', 5, 2);
    expect(reg.page('projects', 3, 1)[0]?.projectID).toBe(atFive);
    const inserted = reg.insertBefore('projects', 1, 3);
    expect(inserted).toHaveLength(3);
    expect(reg.page('projects', 6, 1)[0]?.projectID).toBe(atFive);
  });
});

describe('OverlaySequence matches a plain sorted-array model (property)', () => {
  type Op =
    | { t: 'add'; key: number }
    | { t: 'remove'; pick: number }
    | { t: 'replace'; pick: number }
    | { t: 'grow'; n: number };
  const op: fc.Arbitrary<Op> = fc.oneof(
    fc.record({ t: fc.constant('add' as const), key: fc.integer({ min: 990, max: 1200 }) }),
    fc.record({ t: fc.constant('remove' as const), pick: fc.nat() }),
    fc.record({ t: fc.constant('replace' as const), pick: fc.nat() }),
    fc.record({ t: fc.constant('grow' as const), n: fc.integer({ min: 0, max: 5 }) }),
  );

  it('entries(from), size and keyAt agree with the model after any mutations', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 30 }), fc.array(op, { maxLength: 60 }), (base, ops) => {
        const spec = KEY_SPECS.projects;
        const seq = new OverlaySequence(spec, (i) => ({ k: spec.baseKey(i), v: 'gen' }), base);
        const model = new Map<number, string>();
        let baseCount = base;
        for (let i = 0; i < base; i++) model.set(spec.baseKey(i), 'gen');
        for (const o of ops) {
          const keys = [...model.keys()].sort((a, b) => a - b);
          if (o.t === 'add') {
            const ok = seq.add(o.key, { k: o.key, v: 'added' });
            expect(ok).toBe(!model.has(o.key));
            if (ok) model.set(o.key, 'added');
          } else if (o.t === 'grow') {
            const maxKey = keys.at(-1) ?? -1;
            const next = spec.baseKey(baseCount);
            const extraPast = [...model.entries()].some(([k, v]) => k >= next && v !== 'gen');
            const ok = seq.growBase(o.n);
            // Refused only when a non-generated record sits at or past the next base slot.
            if (ok) {
              for (let i = 0; i < o.n; i++) model.set(spec.baseKey(baseCount + i), 'gen');
              baseCount += o.n;
            } else expect(extraPast || maxKey >= next).toBe(true);
          } else if (keys.length > 0) {
            const key = keys[o.pick % keys.length] as number;
            if (o.t === 'remove') {
              expect(seq.remove(key)).toBe(true);
              model.delete(key);
            } else {
              expect(seq.replace(key, { k: key, v: 'replaced' })).toBe(true);
              model.set(key, 'replaced');
            }
          }
        }
        const keys = [...model.keys()].sort((a, b) => a - b);
        expect(seq.size).toBe(keys.length);
        for (let from = 0; from <= keys.length; from++) {
          const got = [...seq.entries(from)].map((e) => e.key);
          expect(got).toEqual(keys.slice(from));
          expect(seq.keyAt(from)).toBe(keys[from]);
        }
        for (const [k, v] of model) expect(seq.get(k)?.v).toBe(v);
      }),
      { numRuns: 300 },
    );
  });
});

describe('scale', () => {
  it('a 1,000,000-unit registry is lazy: a page at offset 999,000 costs little memory', () => {
    const before = process.memoryUsage().heapUsed;
    const reg = new Registry({ units: 1_000_000 });
    reg.remove('units', '1000000000'); // one removal before the page shifts it by one
    const page = reg.page('units', 999_000, 1000);
    reg.appendUnits(1_000_000);
    const after = reg.page('units', 999_000, 1000);
    const grown = process.memoryUsage().heapUsed - before;
    expect(reg.count('units')).toBe(1_999_999);
    // 999,999 live records before the append: the page is one short and starts one later.
    expect(page).toHaveLength(999);
    expect(page[0]?.unitsOperationID).toBe(String(1_000_000_000 + 4 * 999_001));
    expect(page.at(-1)?.unitsOperationID).toBe(String(1_000_000_000 + 4 * 999_999));
    expect(after).toHaveLength(1000);
    expect(after.at(-1)?.unitsOperationID).toBe(String(1_000_000_000 + 4 * 1_000_000));
    // Materialising a million records would take hundreds of MB.
    expect(grown).toBeLessThan(40 * 1024 * 1024);
  });
});
