import { existsSync, readdirSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import { openPostgres, type PgDatabase } from '../../src/postgres/open.js';
import { type Simulator, startSimulator } from '../../src/simulator/index.js';
import { expectMirrorEquals, feedAfter, pgMirror, queueOutboxRow, scalar } from '../contract/mirrorStores.js';
import { tempDir } from '../helpers/context.js';
import { createTestDatabase, type TestDatabase } from '../helpers/postgres.js';
import { type CliChild, daemonEnv, daemonToml, spawnCli, writeToml } from '../ops/child.js';

/**
 * `vcu-sync sync` as a child process with database.url set: the lists run on the PostgreSQL
 * mirror, against the simulator over loopback on a worst day (a silent page cap below page_size,
 * a failing page, a reset connection), and custody with its ids from the configuration and the
 * PostgreSQL outbox. No SQLite file appears, the password never shows, and two syncs of one
 * resource at once run one at a time.
 */

const cluster = inject('postgres');
const UNITS = '/integration/v1/units';
const PROJECTS = '/integration/v1/projects';

let sim: Simulator;
let database: TestDatabase | undefined;
let store: PgDatabase | undefined;
/** Where database.path points: it must stay empty. */
let dbDir: { dir: string; cleanup: () => void };
/** The config file, kept out of dbDir. */
let aside: { dir: string; cleanup: () => void };

beforeAll(async () => {
  // page_size 200 asks for more than the operator serves (50): the cap is silent.
  sim = await startSimulator({
    projects: 120,
    issuances: 260,
    units: 700,
    maxPageSize: 50,
    webhook: { policy: 'none' },
  });
  dbDir = tempDir('vcu-sync-pgsync-');
  aside = tempDir('vcu-sync-pgsync-conf-');
});
afterEach(async () => {
  await store?.close();
  await database?.drop();
  store = undefined;
  database = undefined;
});
afterAll(async () => {
  await sim?.close();
  dbDir?.cleanup();
  aside?.cleanup();
});

/** A fresh database, and the environment of a sync into it through `operatorUrl` (`extra`: TOML). */
async function fresh(operatorUrl = sim.url, extra = '') {
  database = await createTestDatabase(cluster);
  const config = writeToml(aside.dir, daemonToml({ onStartup: false, pageSize: 200, extra }));
  const env = daemonEnv(dbDir.dir, operatorUrl, config, { VCU_SYNC_DATABASE_URL: database.url });
  return { url: database.url, env };
}

/** The mirror as the test reads it, once a child has created the schema. */
async function mirror() {
  store = await openPostgres(database!.url, { migrate: false, max: 2 });
  return pgMirror(store);
}

/** Exit code and everything the child said, with the checks every run here must pass. */
async function finished(c: CliChild): Promise<{ code: number | null; out: string; stdout: string[] }> {
  const code = await c.exited;
  const out = c.output();
  expect(out).not.toContain(cluster.password);
  expect(readdirSync(dbDir.dir)).toEqual([]);
  // Summary lines (stdout) are the lines that are not pino's JSON (stderr).
  return { code, out, stdout: out.split('\n').filter((l) => l !== '' && !l.startsWith('{')) };
}

const summary = (target: string, status: string, mode: string, counts: string) =>
  new RegExp(`^${target}: ${status} \\(${mode}\\) ${counts}, \\d+ pages in \\d+\\.\\d s \\(\\d+/s\\)$`);

describe('vcu-sync sync on PostgreSQL', () => {
  it('syncs the three lists into a fresh database equal to upstream; then `sync` (all) syncs custody too', async () => {
    const custodyProjects = sim.registry.custodyIds('projects').map(String);
    const { env } = await fresh(sim.url, `[custody]\nprojects = ${JSON.stringify(custodyProjects)}\n`);
    sim.faults.next(1, '503', { pathPrefix: PROJECTS });
    sim.faults.next(1, 'reset', { pathPrefix: UNITS });
    const first = await finished(spawnCli(['sync', 'projects', 'issuances', 'units'], env));
    expect(first.code, first.out.slice(-3000)).toBe(0);
    expect(first.stdout).toHaveLength(3);
    expect(first.stdout[0]).toMatch(
      summary(
        'projects',
        'succeeded',
        'full',
        '120 fetched, 120 inserted, 0 updated, 0 removed, 0 unchanged, 0 quarantined',
      ),
    );
    expect(first.stdout[1]).toMatch(
      summary(
        'issuances',
        'succeeded',
        'full',
        '260 fetched, 260 inserted, 0 updated, 0 removed, 0 unchanged, 0 quarantined',
      ),
    );
    expect(first.stdout[2]).toMatch(
      summary(
        'units',
        'succeeded',
        'full',
        '700 fetched, 700 inserted, 0 updated, 0 removed, 0 unchanged, 0 quarantined',
      ),
    );
    expect(existsSync(path.join(dbDir.dir, 'vcu.db'))).toBe(false);
    const m = await mirror();
    await expectMirrorEquals(m, { sim });
    // The faults were met and the operator's silent cap learned, once per list, as on SQLite.
    expect(sim.faults.pending()).toEqual([]);
    const capped = first.out.split('\n').filter((l) => l.includes('"sync.list.page_capped"'));
    expect(capped.map((l) => (JSON.parse(l) as { pageSize: number }).pageSize)).toEqual([50, 50, 50]);

    // The next day: one project gone, 25 new units, a unit tokenized (accepted); `sync` names
    // nothing, so custody runs too: the configured projects and the outbox's unit.
    const gone = [...sim.registry.snapshot('projects').keys()][40]!;
    sim.registry.remove('projects', gone);
    sim.registry.appendUnits(25);
    const unit = String(sim.registry.custodyIds('units')[0]);
    await queueOutboxRow(m, 't1', 'Tokenization', { unitId: Number(unit) }, 'accepted');
    const all = await finished(spawnCli(['sync'], env));
    expect(all.code, all.out.slice(-3000)).toBe(0);
    expect(all.stdout[0]).toMatch(
      summary(
        'projects',
        'succeeded',
        'full',
        '119 fetched, 0 inserted, 0 updated, 1 removed, 119 unchanged, 0 quarantined',
      ),
    );
    expect(all.stdout[2]).toMatch(
      summary(
        'units',
        'succeeded',
        'incremental',
        '\\d+ fetched, 25 inserted, 0 updated, 0 removed, \\d+ unchanged, 0 quarantined',
      ),
    );
    expect(all.stdout[3]).toMatch(
      summary(
        'custody',
        'succeeded',
        'full',
        '4 fetched, 4 inserted, 0 updated, 0 removed, 0 unchanged, 0 quarantined',
      ),
    );
    expect(all.stdout).toHaveLength(4);
    expect(all.out).not.toContain('"sync.run.skipped"');
    const keys = async (table: string, key: string) =>
      (await m.query(`SELECT ${key} AS k FROM ${table} ORDER BY ${key}`)).map((r) => r.k);
    expect(await keys('custody_projects', '"projectID"')).toEqual([...custodyProjects].sort());
    expect(await keys('custody_units', '"unitsOperationID"')).toEqual([unit]);
    expect(await keys('custody_issuances', '"issuanceId"')).toEqual([]);
    await expectMirrorEquals(m, { sim });
  });

  it('two `sync units` at once on one database: one runs, the other reports the skip (exit 1, as on SQLite); never two runs at once', async () => {
    const proxy = await gatedProxy(sim.url);
    try {
      const { env } = await fresh(proxy.url);
      const a = spawnCli(['sync', 'units'], env);
      const b = spawnCli(['sync', 'units'], env);
      // Whichever took the run lock waits on its first page until the other has exited.
      // Both fetching units at once (the lock not held) shows as a second request while one is held.
      const first = await Promise.race([
        a.exited.then(() => a),
        b.exited.then(() => b),
        proxy.secondWhileHeld.then(() => undefined),
      ]);
      proxy.release();
      if (!first) throw new Error('both syncs fetched units at once');
      const winner = first === a ? b : a;
      const [skip, run] = [await finished(first), await finished(winner)];
      expect(proxy.held()).toBe(true);
      expect(skip.code, skip.out.slice(-3000)).toBe(1);
      expect(skip.stdout).toEqual([
        expect.stringMatching(
          /^units: failed \(full\) 0 fetched, .* in 0\.0 s \(0\/s\): units: another replica is already syncing it$/,
        ),
      ]);
      expect(skip.out).toContain('"event":"sync.run.skipped"');
      expect(run.code, run.out.slice(-3000)).toBe(0);
      expect(run.stdout[0]).toMatch(
        summary(
          'units',
          'succeeded',
          '(full|incremental)',
          `\\d+ fetched, ${sim.registry.count('units')} inserted, 0 updated, 0 removed, 0 unchanged, 0 quarantined`,
        ),
      );
      const m = await mirror();
      await expectMirrorEquals(m, { sim }, ['unit_operations']);
      // The skipped sync never started a run: one row, finished.
      const runs = await m.query(
        "SELECT id, status, started_at, finished_at FROM sync_runs WHERE resource = 'units' ORDER BY started_at",
      );
      expect(runs.map((r) => r.status)).toEqual(['succeeded']);
      expect(
        await scalar(
          m,
          `SELECT count(*) FROM sync_runs x JOIN sync_runs y ON x.id < y.id AND x.resource = y.resource
            WHERE x.resource = 'units' AND y.started_at < coalesce(x.finished_at, 'infinity')
              AND x.started_at < coalesce(y.finished_at, 'infinity')`,
        ),
      ).toBe(0);
    } finally {
      await proxy.close();
    }
  });

  it('custody named on the command line syncs, alone or with a list; an id gone from custody is removed', async () => {
    const units = sim.registry.custodyIds('units').map(String);
    const { env } = await fresh(sim.url, `[custody]\nunits = ${JSON.stringify(units)}\n`);
    const first = await finished(spawnCli(['sync', 'custody'], env));
    expect(first.code, first.out.slice(-3000)).toBe(0);
    expect(first.stdout).toEqual([
      expect.stringMatching(
        summary(
          'custody',
          'succeeded',
          'full',
          '10 fetched, 10 inserted, 0 updated, 0 removed, 0 unchanged, 0 quarantined',
        ),
      ),
    ]);
    const m = await mirror();
    const seq = await scalar(m, 'SELECT coalesce(max(seq), 0) FROM changes');
    expect(seq).toBe(10);
    // The operator no longer has one of them in custody: a 404, the row kept with its end.
    const left = units[4]!;
    sim.registry.removeFromCustody('units', [left]);
    try {
      const second = await finished(spawnCli(['sync', 'units', 'custody'], env));
      expect(second.code, second.out.slice(-3000)).toBe(0);
      expect(second.stdout).toHaveLength(2);
      expect(second.stdout[0]).toMatch(/^units: succeeded /);
      expect(second.stdout[1]).toMatch(
        summary(
          'custody',
          'succeeded',
          'full',
          '9 fetched, 0 inserted, 0 updated, 1 removed, 9 unchanged, 0 quarantined',
        ),
      );
      expect((await feedAfter(m, seq)).filter((f) => f.startsWith('custody_'))).toEqual([
        `custody_units ${left} remove`,
      ]);
      expect(await scalar(m, 'SELECT count(*) FROM custody_units WHERE _custody_ended_at IS NOT NULL')).toBe(
        1,
      );
      expect(await scalar(m, 'SELECT count(*) FROM custody_ids WHERE ended_at IS NOT NULL')).toBe(1);
    } finally {
      sim.registry.addToCustody('units', [left]);
    }
  });
});

/**
 * A loopback proxy in front of the simulator that holds the first units page until `release()`:
 * the sync holding the run lock is then mid-run for certain while the other one starts.
 */
async function gatedProxy(target: string) {
  let release!: () => void;
  const gate = new Promise<void>((resolve) => {
    release = resolve;
  });
  let held = false;
  let released = false;
  let second!: () => void;
  const secondWhileHeld = new Promise<void>((resolve) => {
    second = resolve;
  });
  void gate.then(() => {
    released = true;
  });
  const server = http.createServer((req, res) => {
    const units = req.url?.startsWith(UNITS) === true;
    if (units && held && !released) second();
    const hold = units && !held;
    if (hold) held = true;
    void (hold ? gate : Promise.resolve()).then(() => {
      const upstream = http.request(
        new URL(req.url ?? '/', target),
        { method: req.method, headers: req.headers },
        (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        },
      );
      upstream.on('error', () => res.destroy());
      req.pipe(upstream);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}`,
    held: () => held,
    /** Settles when a units request arrives while the first is held. */
    secondWhileHeld,
    release,
    close: () => {
      release();
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
