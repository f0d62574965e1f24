import { describe, expect, it } from 'vitest';
import type { Checkpoint } from '../../src/mirror/scan/checkpoint.js';
import { readCheckpointState } from '../../src/mirror/scan/checkpoint.js';
import {
  admitBatch,
  checkpointAt,
  closeFull,
  closeIncremental,
  endPage,
  freshFullScan,
  markDrift,
  nextRequest,
  type PageEnd,
  placeRecord,
  planScan,
  removalRefusal,
  type ScanCursor,
  type ScanPlan,
  type ScanTarget,
  startCursor,
  tombstoneVerdict,
} from '../../src/mirror/scan/cursor.js';
import type { PageShape } from '../../src/mirror/scan/pager.js';
import { OverlapMismatch } from '../../src/mirror/syncErrors.js';
import { identify } from '../../src/mirror/writeDecision.js';

/** Pure decisions of the scan cursor, table by table: each row is an input and the decision it must give. */

const UNITS: ScanTarget = { name: 'units', table: 'unit_operations', key: 'unitsOperationID', log: true };
const PROJECTS: ScanTarget = { name: 'projects', table: 'projects', key: 'projectID', log: false };
const NOW = '2026-01-02T03:04:05.000Z';
const facts = { now: NOW, hasLive: true, overlapRows: [], logStartKey: null };

const cp = (state: Checkpoint['state'], extra: Partial<Checkpoint> = {}): Checkpoint => ({
  resource: 'units',
  runId: 7,
  mode: 'full',
  nextOffset: 400,
  scanStartedAt: '2026-01-01T00:00:00.000Z',
  state,
  ...extra,
});

/** A record of the units log as the page reader yields it. */
const unit = (id: number, position: number = id) => ({
  value: { unitsOperationID: id, note: `op ${id}` },
  position,
});

/** A cursor of `plan` over `target`, then `patch` applied (the state a scan would have reached). */
function cursorOf(target: ScanTarget, plan: ScanPlan, patch: Partial<ScanCursor> = {}): ScanCursor {
  return Object.assign(startCursor(target, plan, facts), patch);
}

const incremental = (known: number, overlap: number) =>
  planScan(cp({ inScan: false, trackSeen: false, logLength: known }), true, false, overlap);

describe('where a run starts (from its checkpoint)', () => {
  const rows: [string, Checkpoint | undefined, boolean, boolean, Partial<ScanPlan>][] = [
    [
      'no checkpoint: a fresh full scan',
      undefined,
      true,
      false,
      { mode: 'full', startOffset: 0, trackSeen: null },
    ],
    [
      'an unfinished scan resumes where it stopped, even when full is asked',
      cp({ inScan: true, trackSeen: true, lastKey: 'k399', drifted: true, pageSize: 100 }),
      false,
      true,
      {
        mode: 'full',
        startOffset: 400,
        resumedFrom: 7,
        anchor: 'k399',
        drifted: true,
        pageSize: 100,
        trackSeen: true,
      },
    ],
    [
      'a units log with a known length goes on incrementally with the overlap',
      cp({ inScan: false, trackSeen: false, logLength: 1000 }),
      true,
      false,
      { mode: 'incremental', startOffset: 990, window: { start: 990, known: 1000 }, trackSeen: false },
    ],
    [
      'an overlap longer than the log starts at 0',
      cp({ inScan: false, trackSeen: false, logLength: 4 }),
      true,
      false,
      { mode: 'incremental', startOffset: 0, window: { start: 0, known: 4 } },
    ],
    [
      '--full scans the log afresh, keeping the learned page size',
      cp({ inScan: false, trackSeen: false, logLength: 1000, pageSize: 50 }),
      true,
      true,
      { mode: 'full', startOffset: 0, window: null, pageSize: 50 },
    ],
    [
      'a list between scans scans afresh',
      cp({ inScan: false, trackSeen: false, pageSize: 50 }),
      false,
      false,
      { mode: 'full', startOffset: 0, resumedFrom: null, pageSize: 50 },
    ],
    [
      'an unreadable stored state is no scan in progress',
      cp(readCheckpointState('{not json')),
      false,
      false,
      { mode: 'full', startOffset: 0, resumedFrom: null, pageSize: null },
    ],
  ];
  for (const [name, checkpoint, isLog, full, expected] of rows) {
    it(name, () => expect(planScan(checkpoint, isLog, full, 10)).toMatchObject(expected));
  }

  it('a fresh scan tracks seen keys only when the table has live rows; a resumed one keeps its choice', () => {
    expect(startCursor(PROJECTS, freshFullScan(null), { ...facts, hasLive: false }).trackSeen).toBe(false);
    expect(startCursor(PROJECTS, freshFullScan(null), { ...facts, hasLive: true }).trackSeen).toBe(true);
    const resumed = planScan(cp({ inScan: true, trackSeen: false }), false, false, 10);
    expect(startCursor(PROJECTS, resumed, { ...facts, hasLive: true }).trackSeen).toBe(false);
    expect(startCursor(PROJECTS, resumed, facts).scanStartedAt).toBe('2026-01-01T00:00:00.000Z');
    expect(startCursor(PROJECTS, freshFullScan(null), facts).scanStartedAt).toBe(NOW);
  });
});

describe('the next page request', () => {
  const rows: [
    string,
    Partial<ScanCursor>,
    ScanPlan,
    { offset: number; limit: number; anchor: string | null },
  ][] = [
    ['the first page: no anchor', {}, freshFullScan(null), { offset: 0, limit: 500, anchor: null }],
    [
      'a later page starts one record early, on the last key read',
      { offset: 500, lastKey: 'k499' },
      freshFullScan(null),
      { offset: 499, limit: 500, anchor: 'k499' },
    ],
    [
      'after a page of only the anchor: at the offset itself',
      { offset: 1, lastKey: 'k0', anchored: false },
      freshFullScan(null),
      { offset: 1, limit: 500, anchor: null },
    ],
    [
      'a learned cap pages with the cap',
      { pageSize: 100 },
      freshFullScan(null),
      { offset: 0, limit: 100, anchor: null },
    ],
    [
      'a cap above the configured size changes nothing',
      { pageSize: 1000 },
      freshFullScan(null),
      { offset: 0, limit: 500, anchor: null },
    ],
    [
      'a resumed scan anchors on its checkpoint key',
      {},
      planScan(cp({ inScan: true, trackSeen: true, lastKey: 'k399' }), false, false, 10),
      { offset: 399, limit: 500, anchor: 'k399' },
    ],
    [
      'an incremental run never anchors: the overlap proves the log instead',
      { lastKey: '989' },
      incremental(1000, 10),
      { offset: 990, limit: 500, anchor: null },
    ],
  ];
  for (const [name, patch, plan, expected] of rows) {
    it(name, () => expect(nextRequest(cursorOf(PROJECTS, plan, patch), 500)).toMatchObject(expected));
  }
});

describe('where a record stands', () => {
  const rows: [string, ScanPlan, Partial<ScanCursor>, number, 'verify' | 'held' | 'new'][] = [
    ['a full scan writes everything', freshFullScan(null), {}, 5, 'new'],
    ['incremental: before the overlap, held', incremental(1000, 10), {}, 989, 'held'],
    ['incremental: first overlap position, verified', incremental(1000, 10), {}, 990, 'verify'],
    ['incremental: last overlap position, verified', incremental(1000, 10), {}, 999, 'verify'],
    ['incremental: first position after the log, new', incremental(1000, 10), {}, 1000, 'new'],
    [
      'incremental: already written by this run, held',
      incremental(1000, 10),
      { logLength: 1005 },
      1003,
      'held',
    ],
  ];
  for (const [name, plan, patch, position, expected] of rows) {
    it(name, () => expect(placeRecord(cursorOf(UNITS, plan, patch), position)).toBe(expected));
  }
});

describe('admitting a batch', () => {
  /** An incremental cursor whose mirror holds units 0..3 at their positions; overlap 2. */
  const heldLog = () =>
    startCursor(UNITS, incremental(4, 2), {
      ...facts,
      overlapRows: [2, 3].map((p) => ({
        ...identify(unit(p).value, UNITS.key),
        key: String(p),
        position: p,
      })),
      logStartKey: '0',
    });

  it('a full scan writes the batch as it is and remembers the last key', () => {
    const cursor = cursorOf(PROJECTS, freshFullScan(null));
    const records = [
      { value: { projectID: 1 }, position: null },
      { value: { projectID: 'a2' }, position: null },
    ];
    expect(admitBatch(cursor, records)).toEqual(records);
    expect(cursor.lastKey).toBe('a2');
  });

  it('incremental: the overlap is verified, held positions dropped, new ones written and the log extended', () => {
    const cursor = heldLog();
    expect(admitBatch(cursor, [unit(2), unit(3), unit(4), unit(5)])).toEqual([unit(4), unit(5)]);
    expect(cursor.logLength).toBe(6);
    expect([...cursor.verified]).toEqual([2, 3]);
    // The whole log again (an operator ignoring offset): everything held, nothing to write.
    expect(admitBatch(cursor, [unit(0), unit(1), unit(2), unit(3), unit(4), unit(5)])).toBeNull();
    expect(closeIncremental(cursor, 9)).toBeNull();
  });

  const mismatches: [string, { value: unknown; position: number }[]][] = [
    [
      'a changed record in the overlap',
      [unit(2), { value: { unitsOperationID: 3, note: 'rewritten' }, position: 3 }],
    ],
    ['another record at an overlap position', [unit(2), { ...unit(9), position: 3 }]],
    ['a new record before the overlap was all read', [unit(2), { ...unit(4), position: 4 }]],
  ];
  for (const [name, records] of mismatches) {
    it(`incremental: ${name} falls back to a full scan`, () => {
      expect(() => admitBatch(heldLog(), records)).toThrow(OverlapMismatch);
    });
  }

  it('incremental: a run that ends without reading the whole overlap falls back too', () => {
    const cursor = heldLog();
    admitBatch(cursor, [unit(2)]);
    expect(() => closeIncremental(cursor, 9)).toThrow(OverlapMismatch);
  });

  it('drift: a list goes on (logged once, no tombstones); a log falls back', () => {
    const list = cursorOf(PROJECTS, freshFullScan(null));
    expect([markDrift(list), markDrift(list), list.drifted]).toEqual([true, false, true]);
    expect(() => markDrift(heldLog())).toThrow(OverlapMismatch);
  });
});

describe('what follows a page', () => {
  const page = (offset: number, limit: number, count: number, extra: Partial<PageShape> = {}): PageShape => ({
    offset,
    limit,
    count,
    skipped: offset > 0 ? 1 : 0,
    whole: false,
    firstKey: null,
    lastKey: null,
    ...extra,
  });
  const rows: [
    string,
    Partial<ScanCursor>,
    PageShape | 'same-page',
    PageEnd,
    Partial<ScanCursor> & { capped?: number | null },
  ][] = [
    [
      'next: a full page',
      { offset: 0 },
      page(0, 100, 100),
      { next: 'page' },
      { offset: 100, anchored: true, pages: 1 },
    ],
    ['next: a short page is not the end', { offset: 0 }, page(0, 100, 40), { next: 'page' }, { offset: 40 }],
    [
      'done: nothing new after the anchor',
      { offset: 100, pages: 1, servedMost: 100 },
      page(99, 100, 1),
      { next: 'done', why: 'empty' },
      { logLength: 100 },
    ],
    [
      'done: an empty first page',
      { offset: 0 },
      page(0, 100, 0),
      { next: 'done', why: 'empty' },
      { logLength: 0 },
    ],
    [
      'unpaginated: a body longer than the limit is the whole list',
      { offset: 0 },
      page(0, 100, 3000, { whole: true }),
      { next: 'done', why: 'unpaginated' },
      { logLength: 3000 },
    ],
    [
      'same page: the list ignores offset; a full page may hide more',
      { offset: 100, previous: page(0, 100, 100) },
      'same-page',
      { next: 'done', why: 'same-page' },
      { incomplete: 'the list ignores offset and answered only 100 records', logLength: 100 },
    ],
    [
      'same page: a short page was all of it',
      { offset: 40, previous: page(0, 100, 40) },
      'same-page',
      { next: 'done', why: 'same-page' },
      { incomplete: null, logLength: 40 },
    ],
    [
      'capped: two short pages of the same length prove the cap',
      { offset: 40, pages: 1, previous: page(0, 100, 40) },
      page(39, 100, 40),
      { next: 'page' },
      { pageSize: 40, capped: 40, offset: 79 },
    ],
    [
      'not capped: one short page then a shorter one',
      { offset: 40, pages: 1, previous: page(0, 100, 40) },
      page(39, 100, 20),
      { next: 'page' },
      { pageSize: null, capped: null },
    ],
    [
      'max pages: full pages stop at the limit',
      { offset: 200, pages: 2 },
      page(199, 100, 100),
      { next: 'max-pages' },
      {},
    ],
    [
      'max pages: a short last page still gets the request that proves the end',
      { offset: 200, pages: 2 },
      page(199, 100, 30),
      { next: 'page' },
      { offset: 229 },
    ],
  ];
  for (const [name, patch, input, end, after] of rows) {
    it(name, () => {
      const cursor = cursorOf(PROJECTS, freshFullScan(null), patch);
      const ending = endPage(cursor, input, 3);
      expect(ending.end).toEqual(end);
      const { capped, ...fields } = after;
      if (capped !== undefined) expect(ending.capped?.pageSize ?? null).toBe(capped);
      expect(cursor).toMatchObject(fields);
    });
  }
});

describe('the checkpoints a scan commits', () => {
  it('with each batch of a full scan: where to resume, what it knows', () => {
    const cursor = cursorOf(PROJECTS, freshFullScan(null), { lastKey: 'k99', drifted: true, pageSize: 40 });
    expect(checkpointAt(cursor, 3, 100)).toEqual({
      resource: 'projects',
      runId: 3,
      mode: 'full',
      nextOffset: 100,
      scanStartedAt: NOW,
      state: { inScan: true, trackSeen: true, lastKey: 'k99', drifted: true, pageSize: 40 },
    });
  });

  it('with each batch of an incremental run: the log length', () => {
    const cursor = cursorOf(UNITS, incremental(1000, 10), { logLength: 1200 });
    expect(checkpointAt(cursor, 3, 5)).toMatchObject({
      mode: 'incremental',
      nextOffset: 1200,
      state: { inScan: false, trackSeen: false, logLength: 1200 },
    });
  });

  const closing: [string, ScanTarget, Partial<ScanCursor>, Partial<Checkpoint> | null][] = [
    ['a list with nothing learned leaves none', PROJECTS, {}, null],
    [
      'a list keeps a learned page size',
      PROJECTS,
      { pageSize: 40 },
      { nextOffset: 0, state: { inScan: false, trackSeen: false, pageSize: 40 } },
    ],
    [
      'a log keeps its length',
      UNITS,
      { logLength: 3000 },
      { mode: 'incremental', nextOffset: 3000, state: { inScan: false, trackSeen: false, logLength: 3000 } },
    ],
  ];
  for (const [name, target, patch, expected] of closing) {
    it(`after a full scan: ${name}`, () => {
      const result = closeFull(cursorOf(target, freshFullScan(null), patch), 3);
      if (expected === null) expect(result).toBeNull();
      else expect(result).toMatchObject(expected);
    });
  }

  it('after an incremental run: only a newly learned page size needs a checkpoint of its own', () => {
    const plan = incremental(0, 10);
    expect(closeIncremental(cursorOf(UNITS, plan), 3)).toBeNull();
    expect(closeIncremental(cursorOf(UNITS, plan, { pageSize: 40 }), 3)).toMatchObject({
      state: { logLength: 0, pageSize: 40 },
    });
  });
});

describe('whether a finished scan may tombstone', () => {
  const rows: [string, Partial<ScanCursor>, ReturnType<typeof tombstoneVerdict>][] = [
    ['no seen set (the table was empty): nothing to remove', { trackSeen: false }, { kind: 'no-seen-set' }],
    ['a clean complete scan: removals, guarded', { trackSeen: true }, { kind: 'guarded' }],
    [
      'drift: removals wait',
      { trackSeen: true, drifted: true },
      { kind: 'skip', reason: 'records moved during the scan' },
    ],
    [
      'an incomplete read: removals wait, saying why',
      { trackSeen: true, incomplete: 'only 100' },
      { kind: 'skip', reason: 'only 100' },
    ],
  ];
  for (const [name, patch, expected] of rows) {
    it(name, () =>
      expect(tombstoneVerdict(cursorOf(PROJECTS, freshFullScan(null), patch))).toEqual(expected),
    );
  }

  const shares: [number, number, number, boolean][] = [
    [0, 0, 0.5, false],
    [5, 100, 0.05, false],
    [6, 100, 0.05, true],
    [100, 100, 0.5, true],
    [1, 1, 1, false],
  ];
  for (const [unseen, live, share, refused] of shares) {
    it(`removing ${unseen} of ${live} with max share ${share}: ${refused ? 'refused' : 'allowed'}`, () => {
      const refusal = removalRefusal('projects', unseen, live, share);
      if (refused) expect(refusal).toMatch(`refused to mark ${unseen} of ${live} projects removed`);
      else expect(refusal).toBeNull();
    });
  }
});
