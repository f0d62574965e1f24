import { describe, expect, it } from 'vitest';
import type { Finding } from '../../src/reconcile/findingKinds.js';
import type { FindingRow } from '../../src/reconcile/reconcileStatements.js';
import { settleFindings } from '../../src/reconcile/settleFindings.js';

/** What a pass changes in reconciliation_findings (src/reconcile/settleFindings.ts), decided purely. */

const finding = (subjectId: string, over: Partial<Finding> = {}): Finding => ({
  kind: 'outstanding-negative',
  subject: 'issuance',
  subjectId,
  issuanceId: subjectId,
  unitId: null,
  ref: 'r',
  severity: 'critical',
  expectedKg: 0,
  foundKg: -1000,
  detail: 'd',
  ...over,
});

let nextId = 1;
const row = (f: Finding, resolvedAt: string | null = null): FindingRow => ({
  id: nextId++,
  kind: f.kind,
  subject: f.subject,
  subject_id: f.subjectId,
  issuance_id: f.issuanceId,
  unit_id: f.unitId,
  ref: f.ref,
  severity: f.severity,
  expected_kg: f.expectedKg,
  found_kg: f.foundKg,
  detail: f.detail,
  first_seen_at: '2026-03-01T00:00:00.000Z',
  last_seen_at: '2026-03-01T00:00:00.000Z',
  resolved_at: resolvedAt,
});

const everything = () => true;
const keys = (fs: readonly Finding[]) => fs.map((f) => f.subjectId);

describe('settling findings', () => {
  it('new and reopened findings are upserted and open; unchanged ones touched; changed ones refreshed', () => {
    const unchanged = row(finding('same'));
    const back = row(finding('back'), '2026-03-01T01:00:00.000Z');
    const moved = row(finding('moved'));
    const s = settleFindings(
      [unchanged, back, moved],
      [
        finding('same', { foundKg: -1000.0001 }),
        finding('back'),
        finding('moved', { foundKg: -2000 }),
        finding('new'),
        finding('new'),
      ],
      everything,
    );
    expect(keys(s.upsert)).toEqual(['back', 'moved', 'new']);
    expect([...s.opening].map((k) => k.split('\u0000')[2])).toEqual(['back', 'new']);
    expect(s.touch).toEqual([unchanged.id]);
    expect(s.resolve).toEqual([]);
  });

  it('open rows no longer found are resolved when in scope only; resolved ones stay as they are', () => {
    const inScope = row(finding('A'));
    const outOfScope = row(finding('B'));
    const already = row(finding('C'), '2026-03-01T01:00:00.000Z');
    const s = settleFindings([inScope, outOfScope, already], [], (r) => r.issuance_id === 'A');
    expect(s.resolve).toEqual([inScope]);
    expect([s.upsert, s.touch]).toEqual([[], []]);
  });

  it('the same subject under another kind is another finding', () => {
    const s = settleFindings(
      [row(finding('X'))],
      [finding('X', { kind: 'over-issuance', expectedKg: 1, foundKg: 2 })],
      everything,
    );
    expect(s.upsert.map((f) => f.kind)).toEqual(['over-issuance']);
    expect(s.resolve.map((r) => r.kind)).toEqual(['outstanding-negative']);
  });

  it('null and numeric figures differ; a changed detail, ref or unit refreshes', () => {
    const base = row(finding('N', { expectedKg: null }));
    expect(settleFindings([base], [finding('N', { expectedKg: 0 })], everything).upsert).toHaveLength(1);
    for (const over of [{ detail: 'other' }, { ref: 'r2' }, { unitId: 'U' }] as Partial<Finding>[]) {
      const s = settleFindings([row(finding('M'))], [finding('M', over)], everything);
      expect([s.upsert.length, s.opening.size, s.touch.length]).toEqual([1, 0, 0]);
    }
  });
});
