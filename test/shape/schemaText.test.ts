import { describe, expect, it } from 'vitest';
import { schemaQueryOf, schemaText } from '../../src/commands/schema.js';
import type { ChangeView, FieldView } from '../../src/mirror/shape/shapeReads.js';

/** `vcu-sync schema`'s tables and argument checks, as pure functions. */

const AT = '2026-03-02T00:00:00.000Z';
const field = (over: Partial<FieldView>): FieldView => ({
  resource: 'projects',
  field: 'projectStatus',
  types: ['string'],
  admitted: ['string'],
  mapped: true,
  values: null,
  keyFormats: null,
  records: 3,
  present: 3,
  nulls: 0,
  absent: 0,
  firstSeenAt: AT,
  lastSeenAt: AT,
  removedAt: null,
  ...over,
});
const change = (over: Partial<ChangeView>): ChangeView => ({
  id: 1,
  resource: 'projects',
  field: 'projectStatus',
  kind: 'new-value',
  before: null,
  after: 'Suspended',
  mapped: true,
  firstSeenAt: AT,
  lastSeenAt: AT,
  exampleKey: '1004',
  count: 1,
  runId: 2,
  ...over,
});
const query = { resource: null, since: null, limit: 100 };
const NONE_HELD = { counts: {}, records: [] };

describe('vcu-sync schema as text', () => {
  it("never passes the operator's control characters to the terminal", () => {
    const evil = 'Red\u001b[31m\u0007\u009b2J';
    const text = schemaText(
      {
        fields: [field({ field: `x\u001b]0;title\u0007`, values: [evil] })],
        changes: [change({ after: evil, exampleKey: 'k\u001b[2K' })],
        quarantined: {
          counts: { projects: 1 },
          records: [{ id: 1, resource: 'projects', key: 'q\u001b[1m', reason: `schema: ${evil}`, at: AT }],
        },
      },
      query,
    );
    // Every character printed is a newline or printable.
    const controls = [...text].filter((c) => c !== '\n' && /\p{Cc}/u.test(c));
    expect(controls).toEqual([]);
    expect(text).toContain('1: Red\ufffd[31m\ufffd\ufffd2J');
    expect(text).toContain('k\ufffd[2K');
    // The records held back are listed, their keys and reasons as harmless as the rest.
    expect(text).toContain('Held back by the policy');
    expect(text).toContain('projects q\ufffd[1m: schema: Red\ufffd[31m');
  });

  it('shows null and absent shares with one decimal, and - when no complete scan counted records', () => {
    const text = schemaText(
      {
        fields: [
          field({ field: 'a', records: 3000, present: 2999, nulls: 1, absent: 1 }),
          field({ field: 'b', records: 0, present: 0 }),
          field({ field: 'c', records: 3, present: 1, nulls: 1, absent: 2, removedAt: AT }),
        ],
        changes: [],
        quarantined: NONE_HELD,
      },
      query,
    );
    const rows = text.split('\n').map((l) => l.trim().split(/\s{2,}/));
    expect(rows.find((r) => r[1] === 'a')?.slice(4, 6)).toEqual(['<0.1%', '<0.1%']);
    expect(rows.find((r) => r[1] === 'b')?.slice(4, 6)).toEqual(['-', '-']);
    expect(rows.find((r) => r[1] === 'c')?.slice(4, 7)).toEqual(['33.3%', '66.7%', '2026-03-02 00:00:00']);
  });

  it('says when the changes shown are only the newest of more', () => {
    const many = Array.from({ length: 3 }, (_, i) => change({ id: 3 - i, after: `v${i}` }));
    const text = schemaText({ fields: [], changes: many, quarantined: NONE_HELD }, { ...query, limit: 3 });
    expect(text).toMatch(
      /\n\(the 3 newest shown; older ones: GET \/v1\/schema\?limit=1000, or schema_changes with SQL\)\n$/,
    );
    expect(
      schemaText({ fields: [], changes: many.slice(1), quarantined: NONE_HELD }, { ...query, limit: 3 }),
    ).not.toContain('newest shown');
  });

  it('checks the arguments before any database is opened', () => {
    expect(schemaQueryOf('units', '2026-03-02T01:00:00+01:00')).toEqual({
      resource: 'unit_operations',
      since: '2026-03-02T00:00:00.000Z',
      limit: 100,
    });
    expect(schemaQueryOf(undefined, undefined)).toEqual({ resource: null, since: null, limit: 100 });
    expect(schemaQueryOf('constructor', undefined)).toHaveProperty('refused');
    expect(schemaQueryOf('toString', undefined)).toHaveProperty('refused');
    expect(schemaQueryOf(undefined, '2026-03-02T10:00:00')).toHaveProperty('refused');
    expect(schemaQueryOf(undefined, '+002026-03-02T10:00:00Z')).toHaveProperty('refused');
  });
});
