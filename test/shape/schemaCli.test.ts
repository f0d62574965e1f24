import { mkdirSync, readdirSync } from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SCHEMA_RESOURCE_NAMES } from '../../src/cli.js';
import { ManualClock } from '../../src/common/clock.js';
import { SCHEMA_RESOURCE_NAMES as ACCEPTED } from '../../src/mirror/shape/schemaQuery.js';
import { type Simulator, startSimulator } from '../../src/simulator/index.js';
import { sqliteMirror } from '../contract/mirrorStores.js';
import {
  DRIFT_DAY,
  type Drift,
  FIRST_DAY,
  schemaContext,
  seedShape,
  TOKEN,
} from '../contract/schemaRoutes.cases.js';
import { serveApi } from '../contract/serveApi.js';
import { tempDir } from '../helpers/context.js';
import { type CliRun, tableLine, vcuSync } from './schemaCli.js';

/**
 * `vcu-sync schema` as a child process on a SQLite file the mirror synced and then saw drift in
 * (test/contract/schemaRoutes.cases.ts seedShape): the tables it prints, `--json` equal to what
 * `GET /v1/schema` answers over the same file, the filters, and the refusals (exit 2, one line).
 */

let sim: Simulator;
let ctx: ReturnType<typeof schemaContext>;
let api: Awaited<ReturnType<typeof serveApi>>;
let drift: Drift;
const home = tempDir('vcu-sync-schema-cli-');
let run: (...args: string[]) => Promise<CliRun>;

beforeAll(async () => {
  const clock = new ManualClock(Date.parse(`${FIRST_DAY}T00:00:00Z`));
  sim = await startSimulator({ projects: 30, issuances: 20, units: 60 });
  ctx = schemaContext(sim, clock);
  drift = await seedShape(sim, ctx, clock, [sqliteMirror(ctx)]);
  api = await serveApi(ctx, {}, TOKEN);
  run = (...args) => vcuSync(['schema', ...args], { HOME: home.dir, VCU_SYNC_DB: ctx.config.database.path });
});
afterAll(async () => {
  await api?.stop();
  ctx?.operator().close();
  ctx?.dispose();
  await sim?.close();
  home.cleanup();
});

describe('vcu-sync schema on SQLite', () => {
  it('prints each field and the changes, newest first, as tables', async () => {
    const { code, stdout, said } = await run();
    expect(said).toBe('');
    expect(code).toBe(0);
    const [fields, changes] = stdout.split('\n\n');
    expect(fields).toMatch(/^Fields \(NULL and ABSENT: share of the records of the last complete scan\)\n/);
    expect(tableLine(fields!, 'RESOURCE')).toEqual([
      'RESOURCE',
      'FIELD',
      'TYPES',
      'MAPPED',
      'NULL',
      'ABSENT',
      'REMOVED',
      'VALUES',
    ]);
    // One project of 30 has the new field: absent from 29, kept in _raw only.
    expect(tableLine(fields!, 'projects', 'newField')).toEqual([
      'projects',
      'newField',
      'string',
      '_raw',
      '0%',
      '96.7%',
      '-',
      '-',
    ]);
    const status = tableLine(fields!, 'projects', 'projectStatus')!;
    expect(status.slice(0, 6)).toEqual(['projects', 'projectStatus', 'string', 'column(string)', '0%', '0%']);
    // How many values, then as many as fit the cell (80 characters; --json has them all).
    const values = (await api.call('GET', '/v1/schema?resource=projects')).json.fields.find(
      (f: { field: string }) => f.field === 'projectStatus',
    ).values as string[];
    expect(values).toContain('Suspended');
    expect(status[7]).toBe(`${values.length}: ${values.join(' | ')}`.slice(0, 80).trim());
    // A value holding a comma stays one value.
    const type = tableLine(fields!, 'projects', 'projectType')![7]!;
    expect(type).toMatch(/^\d+: Afforestation, Reforestation and Revegetation \| /);
    expect(tableLine(fields!, 'projects', 'projectID')?.[7]).toBe('integer');
    expect(tableLine(fields!, 'unit_operations', 'unitsNote')?.slice(0, 4)).toEqual([
      'unit_operations',
      'unitsNote',
      'string',
      '_raw',
    ]);

    const lines = changes!.trim().split('\n');
    expect(lines[0]).toBe('Changes, newest first (UTC)');
    expect(lines[1]!.trim().split(/\s{2,}/)).toEqual([
      'FIRST_SEEN',
      'RESOURCE',
      'FIELD',
      'KIND',
      'CHANGE',
      'MAPPED',
      'COUNT',
      'EXAMPLE_KEY',
    ]);
    const at = `${DRIFT_DAY} 00:00:00`;
    expect(lines.slice(2).map((l) => l.trim().split(/\s{2,}/))).toEqual([
      [at, 'unit_operations', 'unitsNote', 'field-added', 'string', 'no', '1', drift.unit],
      [
        at,
        'projects',
        'totalEstimatedUnits',
        'type-changed',
        'number -> string',
        'yes',
        '1',
        drift.textNumber,
      ],
      [at, 'projects', 'projectStatus', 'new-value', 'Suspended', 'yes', '1', drift.newStatus],
      [at, 'projects', 'newField', 'field-added', 'string', 'no', '1', drift.newField],
    ]);
  });

  it('--json prints what GET /v1/schema answers, for every resource and a filtered one', async () => {
    for (const [args, query] of [
      [[], ''],
      [['units', '--since', DRIFT_DAY], `?resource=units&since=${DRIFT_DAY}`],
      [
        ['projects', '--since', `${DRIFT_DAY}T00:00:00.001Z`],
        `?resource=projects&since=${DRIFT_DAY}T00:00:00.001Z`,
      ],
    ] as const) {
      const cli = await run(...args, '--json');
      expect(cli.code, cli.said).toBe(0);
      const answer = await api.call('GET', `/v1/schema${query}`);
      expect(answer.status).toBe(200);
      expect(JSON.parse(cli.stdout)).toEqual(answer.json);
    }
    const units = JSON.parse((await run('units', '--json')).stdout) as { changes: Array<{ field: string }> };
    expect(units.changes.map((c) => c.field)).toEqual(['unitsNote']);
  });

  it('takes a table or the sync name, and says when no change is left after --since', async () => {
    const table = await run('unit_operations');
    expect(table.code).toBe(0);
    expect((await run('units')).stdout).toBe(table.stdout);
    const later = await run('projects', '--since', '2030-01-01');
    expect(later.code).toBe(0);
    expect(later.stdout).toContain('\n\nChanges since 2030-01-01T00:00:00.000Z: none\n');
    const custody = await run('custody_units');
    expect(custody.stdout).toBe(
      'Fields: none learned yet (a sync reads the records first)\n\nChanges: none\n',
    );
  });

  it.each([
    [
      ['widgets'],
      /^vcu-sync: schema: resource widgets: expected one of projects, issuances, unit_operations, custody_projects, custody_issuances, custody_units \(or units, for unit_operations\)$/,
    ],
    [
      ['--since', 'yesterday'],
      /^vcu-sync: schema: --since yesterday: expected an ISO date-time with its zone/,
    ],
    [['projects', '--since', '2026-02-30'], /^vcu-sync: schema: --since 2026-02-30: /],
    [['--since', '2026-03-02T10:00'], /^vcu-sync: schema: --since 2026-03-02T10:00: /],
  ])('%j exits 2 with one line naming what it takes', async (args, message) => {
    const { code, stdout, said } = await run(...args);
    expect(code).toBe(2);
    expect(stdout).toBe('');
    expect(said.split('\n')).toHaveLength(1);
    expect(said).toMatch(message);
  });

  it('refuses a missing file and creates none, or a file without the learned shape, with exit 1', async () => {
    const empty = path.join(home.dir, 'empty');
    mkdirSync(empty);
    const missing = await vcuSync(['schema'], { HOME: home.dir, VCU_SYNC_DB: path.join(empty, 'typo.db') });
    expect(missing.code).toBe(1);
    expect(missing.said).toMatch(/^vcu-sync: database .*typo\.db does not exist/);
    expect(readdirSync(empty)).toEqual([]);
    // A file of another program (or of a version before the shape was learned): nothing to read.
    const other = path.join(home.dir, 'other.db');
    const db = new Database(other);
    db.exec('CREATE TABLE outbox (id INTEGER PRIMARY KEY)');
    db.close();
    const old = await vcuSync(['schema'], { HOME: home.dir, VCU_SYNC_DB: other });
    expect(old.code).toBe(1);
    expect(old.said).toBe(
      `vcu-sync: database ${other} has no schema_fields table: no daemon of this version has run on it (vcu-sync db migrate brings it up to date)`,
    );
  });

  it('completes and documents the names it accepts', () => {
    expect([...SCHEMA_RESOURCE_NAMES].sort()).toEqual([...ACCEPTED].sort());
  });
});
