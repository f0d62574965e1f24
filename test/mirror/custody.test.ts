import { afterEach, describe, expect, it } from 'vitest';
import { idsFromTokenization } from '../../src/mirror/custody.js';
import { runSync } from '../../src/mirror/syncRun.js';
import { sqliteBackend } from '../../src/sqlite/mirror.js';
import { count, expectRowMatches, type Harness, harness, noSleep } from './harness.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const TABLES = {
  projects: 'custody_projects',
  issuances: 'custody_issuances',
  units: 'custody_units',
} as const;
const KEYS = { projects: 'projectID', issuances: 'issuanceId', units: 'unitsOperationID' } as const;

describe('custody sync', () => {
  it('reads the data of every id in custody, field by field', async () => {
    h = await harness();
    const outcome = await runSync(h.ctx, 'custody', {
      backend: sqliteBackend(h.ctx.database.sqlite),
      sleep: noSleep,
    });
    expect(outcome.status, outcome.error ?? '').toBe('succeeded');
    for (const kind of ['projects', 'issuances', 'units'] as const) {
      const ids = h.sim.registry.custodyIds(kind).map(String);
      const rows = h.ctx.database.sqlite.prepare(`SELECT * FROM ${TABLES[kind]}`).all() as Record<
        string,
        unknown
      >[];
      expect(rows.map((r) => String(r[KEYS[kind]])).sort()).toEqual([...ids].sort());
      for (const row of rows)
        expectRowMatches(TABLES[kind], row, h.sim.registry.get(kind, String(row[KEYS[kind]]))!);
    }
  });

  it('adds ids from accepted Tokenizations and webhooks; a 404 ends custody without failing the run', async () => {
    h = await harness({}, { 'custody.projects': [], 'custody.issuances': [], 'custody.units': [] });
    const [unitA, unitB] = h.sim.registry.custodyIds('units').map(String);
    const issuance = String(h.sim.registry.custodyIds('issuances')[0]);
    const at = '2026-01-01T00:00:00.000Z';
    const insert = h.ctx.database.sqlite.prepare(
      `INSERT INTO outbox (marketplaceTransactionRef, operationType, body, body_hash, state, next_attempt_at, created_at, updated_at)
       VALUES (?, ?, ?, 'h', ?, ?, ?, ?)`,
    );
    insert.run(
      't1',
      'Tokenization',
      JSON.stringify({ unitId: Number(unitA), issuanceId: issuance }),
      'accepted',
      at,
      at,
      at,
    );
    insert.run('t2', 'Tokenization', JSON.stringify({ unitId: 424242 }), 'queued', at, at, at); // not accepted: ignored
    h.ctx.database.sqlite
      .prepare("INSERT INTO custody_ids (kind, id, source, added_at) VALUES ('units', ?, 'webhook', ?)")
      .run(unitB, at);
    const first = await runSync(h.ctx, 'custody', {
      backend: sqliteBackend(h.ctx.database.sqlite),
      sleep: noSleep,
    });
    expect(first.status).toBe('succeeded');
    expect(count(h.ctx, 'SELECT count(*) n FROM custody_units')).toBe(2);
    expect(count(h.ctx, 'SELECT count(*) n FROM custody_issuances')).toBe(1);

    h.sim.registry.removeFromCustody('units', [unitB!]);
    const second = await runSync(h.ctx, 'custody', {
      backend: sqliteBackend(h.ctx.database.sqlite),
      sleep: noSleep,
    });
    expect(second.status).toBe('succeeded');
    expect(second.counts.removed).toBe(1);
    const row = h.ctx.database.sqlite
      .prepare('SELECT _custody_ended_at FROM custody_units WHERE unitsOperationID = ?')
      .get(unitB) as {
      _custody_ended_at: string | null;
    };
    expect(row._custody_ended_at).not.toBeNull();
    const ids = h.ctx.database.sqlite
      .prepare(
        "SELECT id, source, ended_at IS NOT NULL AS ended FROM custody_ids WHERE kind = 'units' ORDER BY source",
      )
      .all();
    expect(ids).toEqual([
      { id: unitA, source: 'outbox', ended: 0 },
      { id: unitB, source: 'webhook', ended: 1 },
    ]);
    expect(
      count(h.ctx, "SELECT count(*) n FROM changes WHERE resource = 'custody_units' AND kind = 'remove'"),
    ).toBe(1);
  });

  it('reads unitId and issuanceId from a Tokenization body', () => {
    expect(idsFromTokenization('{"unitId":12,"issuanceId":"7"}')).toEqual({ units: '12', issuances: '7' });
    expect(idsFromTokenization('not json')).toEqual({});
    expect(idsFromTokenization('{"unitId":""}')).toEqual({});
  });
});
