import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.js';
import { fillContent, planBatch, prepare, validate } from '../../src/mirror/batchPlan.js';
import { listResources } from '../../src/mirror/resources.js';
import { contentHash, type FetchedRecord, type StoredState } from '../../src/mirror/writeDecision.js';

/**
 * A record whose bytes as sent hash to its row's hash is decided unchanged without being serialized
 * (batchPlan.ts, fillContent); every other record is serialized as before, so what a row stores never
 * depends on how the operator spelled it.
 */
const def = listResources(loadConfig({ env: {}, overrides: {} })).projects;
const project = (id: string, name: string) => ({
  projectID: id,
  projectName: name,
  projectStatus: 'Registered',
});
const canonical = (value: unknown) => JSON.stringify(value);
const sent = (value: unknown, text = canonical(value)): FetchedRecord => ({
  value,
  position: null,
  wire: Buffer.from(text, 'utf8'),
});
const row = (value: unknown, extra: Partial<StoredState> = {}): StoredState => ({
  hash: contentHash(canonical(value)),
  removedAt: null,
  position: null,
  custodyEndedAt: null,
  ...extra,
});

/** Plans `records` against `stored` the way the store does (prepare, fill, validate, plan). */
function plan(records: FetchedRecord[], stored: Map<string, StoredState>, holdsNul = true) {
  const prepared = prepare(def, records, holdsNul);
  validate(def, prepared, stored, fillContent(prepared, stored));
  return { prepared, plan: planBatch(def, prepared, stored, new Set(), false, '2026-11-27T00:00:00.000Z') };
}

describe('content as sent (the re-sync fast path)', () => {
  it('an unchanged record sent as the mirror serializes it is never serialized', () => {
    const a = project('1', 'Alpha');
    const { prepared, plan: p } = plan([sent(a)], new Map([['1', row(a)]]));
    expect(p.result.tally.unchanged).toBe(1);
    expect(p.rows.size).toBe(0);
    expect(prepared[0]!.raw).toBe('');
    expect(prepared[0]!.hash).toBe(contentHash(canonical(a)));
  });

  it('the same content in another spelling is unchanged too, decided on its serialized form', () => {
    const a = project('1', 'Alpha');
    const spaced = JSON.stringify(a, null, 2);
    const { prepared, plan: p } = plan([sent(a, spaced)], new Map([['1', row(a)]]));
    expect(p.result.tally.unchanged).toBe(1);
    expect(prepared[0]!.raw).toBe(canonical(a));
  });

  it('a changed, a new and a returning record store their serialized text, not the bytes sent', () => {
    const before = project('1', 'Alpha');
    const after = project('1', 'Alpha II');
    const fresh = project('2', 'Beta');
    const back = project('3', 'Gamma');
    const stored = new Map([
      ['1', row(before)],
      ['3', row(back, { removedAt: '2026-11-01T00:00:00.000Z' })],
    ]);
    const { plan: p } = plan(
      [sent(after, JSON.stringify(after, null, 1)), sent(fresh, ` ${canonical(fresh)}`), sent(back)],
      stored,
    );
    expect(p.result.tally).toMatchObject({ updated: 1, inserted: 2, unchanged: 0 });
    for (const [key, value] of [
      ['1', after],
      ['2', fresh],
      ['3', back],
    ] as const) {
      expect(p.rows.get(key)?.raw).toBe(canonical(value));
      expect(p.rows.get(key)?.hash).toBe(contentHash(canonical(value)));
    }
  });

  it('a key twice in one batch, changed then sent as its row holds it, writes the last content whole', () => {
    const old = project('1', 'Alpha');
    const changed = project('1', 'Alpha II');
    const { plan: p } = plan([sent(changed), sent(old)], new Map([['1', row(old)]]));
    expect(p.rows.get('1')?.raw).toBe(canonical(old));
    expect(p.rows.get('1')?.hash).toBe(contentHash(canonical(old)));
  });

  it('a store that cannot hold U+0000 still serializes every record up front and refuses NUL', () => {
    const nul = project('1', 'A\u0000B');
    const { prepared, plan: p } = plan([sent(nul)], new Map([['1', row(nul)]]), false);
    expect(prepared[0]!.raw).toBe(canonical(nul));
    expect(p.result.tally.quarantined).toBe(1);
  });
});
