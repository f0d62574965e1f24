import { readdirSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { ManualClock } from '../../src/common/clock.js';
import { openPostgres, type PgDatabase } from '../../src/postgres/open.js';
import { type Simulator, startSimulator } from '../../src/simulator/index.js';
import { pgMirror, sqliteMirror } from '../contract/mirrorStores.js';
import {
  DRIFT_DAY,
  type Drift,
  FIRST_DAY,
  schemaContext,
  seedShape,
} from '../contract/schemaRoutes.cases.js';
import { tempDir } from '../helpers/context.js';
import { freePort } from '../helpers/net.js';
import { createTestDatabase, type TestDatabase } from '../helpers/postgres.js';
import { type CliRun, vcuSync } from '../shape/schemaCli.js';

/**
 * `vcu-sync schema` as a child process with database.url set, on a PostgreSQL mirror synced beside a
 * SQLite one (the same runs, the same clock, the same drift): each command prints the same on both,
 * no SQLite file appears on PostgreSQL's side and the password never shows; a database no daemon
 * ran on is refused with exit 1.
 */

const cluster = inject('postgres');
let sim: Simulator;
let ctx: ReturnType<typeof schemaContext>;
let database: TestDatabase;
let store: PgDatabase;
let drift: Drift;
/** database.path of the PostgreSQL runs: it must stay empty. */
const pgDir = tempDir('vcu-sync-pgschema-');

beforeAll(async () => {
  const clock = new ManualClock(Date.parse(`${FIRST_DAY}T00:00:00Z`));
  sim = await startSimulator({ projects: 30, issuances: 20, units: 60 });
  ctx = schemaContext(sim, clock);
  database = await createTestDatabase(cluster, { icuLocale: 'en-US' });
  store = await openPostgres(database.url, { max: 4 });
  drift = await seedShape(sim, ctx, clock, [sqliteMirror(ctx), pgMirror(store)]);
});
afterAll(async () => {
  await store?.close();
  await database?.drop();
  ctx?.operator().close();
  ctx?.dispose();
  await sim?.close();
  pgDir.cleanup();
});

/** `vcu-sync schema ARGS` on PostgreSQL, with the checks every run there must pass. */
async function onPostgres(args: string[], url = database.url): Promise<CliRun> {
  const run = await vcuSync(['schema', ...args], {
    HOME: pgDir.dir,
    VCU_SYNC_DB: `${pgDir.dir}/vcu.db`,
    VCU_SYNC_DATABASE_URL: url,
  });
  expect(run.stdout + run.said).not.toContain(cluster.password);
  expect(readdirSync(pgDir.dir)).toEqual([]);
  return run;
}

const onSqlite = (args: string[]) =>
  vcuSync(['schema', ...args], { HOME: pgDir.dir, VCU_SYNC_DB: ctx.config.database.path });

describe('vcu-sync schema on PostgreSQL', () => {
  it.each([[[]], [['--json']], [['projects', '--since', DRIFT_DAY]], [['units', '--json']]])(
    'schema %j prints what it prints on SQLite',
    async (args) => {
      const [pg, sqlite] = await Promise.all([onPostgres(args), onSqlite(args)]);
      expect(pg.said).toBe('');
      expect(pg.code).toBe(0);
      expect(pg).toEqual(sqlite);
      expect(pg.stdout).toContain(args.includes('units') ? drift.unit : drift.textNumber);
    },
  );

  it('refuses a database no daemon ran on or a server not there with exit 1, and a bad resource with exit 2 before connecting', async () => {
    const fresh = await createTestDatabase(cluster);
    try {
      const never = await onPostgres([], fresh.url);
      expect(never.code).toBe(1);
      expect(never.said).toBe(
        `vcu-sync: database 127.0.0.1:${cluster.port}/${fresh.name} has no schema_fields table: no daemon of this version has run on it (vcu-sync db migrate brings it up to date)`,
      );
    } finally {
      await fresh.drop();
    }
    // A server that is not there: one line, exit 1, its password not in it.
    const away = await onPostgres(
      [],
      `postgres://nobody:away-secret-0123@127.0.0.1:${await freePort()}/none`,
    );
    expect(away.code).toBe(1);
    expect(away.said).toMatch(
      /^vcu-sync: database: cannot connect to PostgreSQL at 127\.0\.0\.1:\d+\/none: /,
    );
    expect(away.said.split('\n')).toHaveLength(1);
    expect(away.said).not.toContain('away-secret-0123');
    const bad = await onPostgres(['widgets'], 'postgres://nobody:secret@127.0.0.1:9/none');
    expect(bad.code).toBe(2);
    expect(bad.said).toMatch(/^vcu-sync: schema: resource widgets: expected one of /);
  });
});
