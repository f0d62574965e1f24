/**
 * The operator's worst day, against real `vcu-sync` child processes: huge, compressed, endless,
 * trickling and deeply nested bodies, and a huge /notify answer. Each run must end (failed with a
 * clear message, or the bad record quarantined while the rest is mirrored), with the child's peak
 * RSS under a generous bound and the database small.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openSqliteContext } from '../../src/app/sqliteStores.js';
import { silentLogger } from '../../src/common/log.js';
import { loadConfig } from '../../src/config/config.js';
import { truncatedMarker } from '../../src/operator/client.js';
import { cliArgs, tsNodeArgs } from '../helpers/cli.js';
import { tempDir } from '../helpers/context.js';
import { until, writeToml } from '../ops/child.js';
import { enqueueOperation, tokenization } from '../outbox/fixtures.js';
import {
  gzipBomb,
  type HostileServer,
  json,
  project,
  startHostileServer,
  streamed,
  trickle,
} from './hostileServer.js';

const MiB = 1024 * 1024;
/**
 * Generous: what an honest run peaks at (measured first: run from the sources through tsx, a child
 * starts near 280 MB), plus 100 MB. Without the limits, the 400 MB read alone took RSS past 3.5 GB.
 */
const RSS_MARGIN_MB = 100;
let rssBoundMb = Number.NaN;
const PRELOAD = pathToFileURL(path.join(import.meta.dirname, '../bench/lib/maxRss.mjs')).href;

let server: HostileServer;
beforeAll(async () => {
  server = await startHostileServer();
  // The baseline: an honest custody sync of one record, in the same kind of child.
  server.on('/data/projects/honest', json({ projectID: 'honest', projectName: 'Fine' }));
  const s = setup({ custody: 'projects = ["honest"]' });
  try {
    const run = await sync(s, 'custody');
    if (run.code !== 0 || Number.isNaN(run.rssMb)) throw new Error(`baseline run failed: ${run.output}`);
    rssBoundMb = run.rssMb + RSS_MARGIN_MB;
  } finally {
    s.cleanup();
  }
});
afterAll(async () => {
  await server.close();
});

interface Finished {
  code: number | null;
  output: string;
  rssMb: number;
}

/** Runs node `args` with the peak-RSS preload; resolves when it exits. */
function spawnMeasured(
  args: string[],
  env: NodeJS.ProcessEnv,
): { child: ChildProcess; done: Promise<Finished> } {
  const child = spawn(process.execPath, ['--import', PRELOAD, ...args], {
    env: { PATH: process.env.PATH, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (d: Buffer) => {
    output += String(d);
  });
  child.stderr!.on('data', (d: Buffer) => {
    output += String(d);
  });
  const done = new Promise<Finished>((resolve) => {
    child.once('exit', (code) => {
      const m = output.match(/BENCH_MAXRSS_KB=(\d+)/);
      resolve({ code, output, rssMb: m ? Number(m[1]) / 1024 : Number.NaN });
    });
  });
  return { child, done };
}

const BASE_TOML = `
[operator]
rate_per_second = 100000
projects_path = "/list/projects"
project_data_path = "/data/projects/{id}"
issuance_data_path = "/data/issuances/{id}"
units_data_path = "/data/units/{id}"

[sync]
page_size = 50
page_attempts = 1
`;

/**
 * A fresh folder with a config: BASE_TOML, then `sections` merged in. The request timeout is 5 s (so
 * a 10 s idle timeout is allowed; shorter ones let a starved test server trip the socket timeout on a
 * busy machine), or 30 s when `slow`: a run that inflates hundreds of MB leaves its socket idle meanwhile.
 */
function setup(sections: Record<string, string> = {}, slow = false) {
  const { dir, cleanup } = tempDir('vcu-sync-hostile-');
  let toml = BASE_TOML.replace('[operator]\n', `[operator]\ntimeout_ms = ${slow ? 30_000 : 5_000}\n`).replace(
    '[sync]\n',
    `[sync]\nidle_timeout_seconds = ${slow ? 60 : 10}\n`,
  );
  for (const [section, keys] of Object.entries(sections)) {
    toml = toml.includes(`[${section}]\n`)
      ? toml.replace(`[${section}]\n`, `[${section}]\n${keys}\n`)
      : `${toml}\n[${section}]\n${keys}\n`;
  }
  const config = writeToml(dir, toml);
  const db = path.join(dir, 'vcu-sync.db');
  const env = { VCU_SYNC_DB: db, VCU_SYNC_OPERATOR_URL: server.url, VCU_SYNC_API_KEY: 'hostile-key' };
  return { dir, db, config, env, cleanup };
}

type Setup = ReturnType<typeof setup>;

async function sync(s: Setup, target: string): Promise<Finished> {
  return spawnMeasured(cliArgs(['sync', target, '--config', s.config]), s.env).done;
}

function dbBytes(db: string): number {
  return [db, `${db}-wal`].reduce((n, f) => n + (existsSync(f) ? statSync(f).size : 0), 0);
}

function query<T>(db: string, sql: string): T[] {
  const sqlite = new Database(db, { readonly: true });
  try {
    return sqlite.prepare(sql).all() as T[];
  } finally {
    sqlite.close();
  }
}

interface RunRow {
  status: string;
  error: string | null;
  fetched: number;
  quarantined: number;
}

function lastRun(db: string, resource: string): RunRow {
  return query<RunRow>(
    db,
    `SELECT * FROM sync_runs WHERE resource = '${resource}' ORDER BY id DESC LIMIT 1`,
  )[0]!;
}

/** Five Tokenizations sent by a dispatcher child; what it stored and its peak RSS. */
async function dispatchFive(
  prefix: string,
): Promise<{ run: Finished; responses: string[]; dbBytes: number }> {
  const s = setup();
  const overrides = { 'operator.rate_per_second': 100_000, 'outbox.poll_ms': 20 };
  const config = loadConfig({ env: s.env, overrides });
  const ctx = openSqliteContext(config, silentLogger);
  for (let i = 0; i < 5; i++) enqueueOperation(ctx, tokenization(`${prefix}-${i}`));
  ctx.database.close();
  const { child, done } = spawnMeasured(tsNodeArgs('test/outbox/dispatchChild.ts'), {
    ...s.env,
    VCU_SYNC_TEST_OVERRIDES: JSON.stringify(overrides),
  });
  try {
    const accepted = () =>
      query<{ n: number }>(s.db, "SELECT count(*) AS n FROM outbox WHERE state = 'accepted'")[0]!.n;
    await until('five accepted operations', () => accepted() === 5);
    child.kill('SIGTERM');
    const run = await done;
    const responses = query<{ response: string }>(s.db, 'SELECT response FROM outbox').map((r) => r.response);
    return { run, responses, dbBytes: dbBytes(s.db) };
  } finally {
    if (child.exitCode === null) child.kill('SIGKILL');
    s.cleanup();
  }
}

/** The child's peak RSS and the database's size are under their bounds. */
function expectBounded(run: Finished, db: string, maxDbMb: number, boundMb = rssBoundMb): void {
  expect(run.rssMb, run.output.slice(-2000)).toBeLessThan(boundMb);
  expect(dbBytes(db)).toBeLessThan(maxDbMb * MiB);
}

describe('a hostile operator, against child processes', () => {
  it('quarantines a 400 MB data read, a 2.2 GB gzip bomb and a 100,000-deep record; mirrors the rest', async () => {
    server.on(
      '/data/projects/big',
      streamed('{"projectID":"big","pad":"', Buffer.alloc(64 * 1024, 0x30), 400 * MiB, '"}'),
    );
    server.on('/data/projects/bomb', gzipBomb('{"projectID":"bomb","pad":"', 2200 * MiB, '"}'));
    server.on(
      '/data/projects/deep',
      json(`{"projectID":"deep","x":${'['.repeat(100_000)}${']'.repeat(100_000)}}`),
    );
    server.on('/data/projects/ok', json({ projectID: 'ok', projectName: 'Fine' }));
    const s = setup({ custody: 'projects = ["big", "bomb", "deep", "ok"]' }, true);
    try {
      const run = await sync(s, 'custody');
      expect(run.code, run.output.slice(-3000)).toBe(0);
      expect(lastRun(s.db, 'custody')).toMatchObject({ status: 'succeeded', quarantined: 3 });
      const quarantined = query<{ record_id: string; reason: string; raw: string }>(
        s.db,
        "SELECT record_id, reason, raw FROM quarantine WHERE resource = 'custody_projects' ORDER BY record_id",
      );
      expect(quarantined.map((q) => [q.record_id, q.reason])).toEqual([
        ['big', 'record larger than operator.max_record_bytes (1048576 bytes)'],
        ['bomb', 'record larger than operator.max_record_bytes (1048576 bytes)'],
        ['deep', 'record nested deeper than operator.max_depth (64 levels)'],
      ]);
      for (const q of quarantined) expect(q.raw.length).toBeLessThan(1200);
      expect(query(s.db, 'SELECT projectID, projectName FROM custody_projects')).toEqual([
        { projectID: 'ok', projectName: 'Fine' },
      ]);
      expectBounded(run, s.db, 5);
    } finally {
      s.cleanup();
    }
  });

  it('quarantines a compressed 256 MB list element and a 100,000-deep one; mirrors the others', async () => {
    const deep = `{"projectID":"2","x":${'['.repeat(100_000)}${']'.repeat(100_000)}}`;
    server.on(
      '/list/projects',
      gzipBomb(
        `[${project(1)},${deep},${project(3)},{"projectID":"4","pad":"`,
        256 * MiB,
        `"},${project(5)}]`,
      ),
    );
    const s = setup({}, true);
    try {
      const run = await sync(s, 'projects');
      expect(run.code, run.output.slice(-3000)).toBe(0);
      const q = query<{ record_id: string; reason: string }>(
        s.db,
        'SELECT record_id, reason FROM quarantine ORDER BY record_id',
      );
      expect(q).toEqual([
        { record_id: '2', reason: 'record nested deeper than operator.max_depth (64 levels)' },
        { record_id: '4', reason: 'record larger than operator.max_record_bytes (1048576 bytes)' },
      ]);
      expect(query(s.db, 'SELECT projectID FROM projects ORDER BY projectID')).toEqual([
        { projectID: '1' },
        { projectID: '3' },
        { projectID: '5' },
      ]);
      expectBounded(run, s.db, 5);
    } finally {
      s.cleanup();
    }
  });

  it('fails a run whose list element never closes, by the idle timeout, memory flat', async () => {
    // About 30 MB/s, for as long as the client reads (3 GiB at most).
    server.sent.delete('/list/projects');
    const zeros = Buffer.alloc(64 * 1024, 0x30);
    server.on('/list/projects', streamed(`[${project(1)},{"projectID":"2","pad":"`, zeros, Infinity, '', 2));
    const s = setup();
    try {
      const run = await sync(s, 'projects');
      expect(run.code).not.toBe(0);
      const last = lastRun(s.db, 'projects');
      expect(last.status).toBe('failed');
      expect(last.error, run.output.slice(-1500)).toMatch(
        /^projects: no record committed for 10 s \(sync\.idle_timeout_seconds\)/,
      );
      // It read far more than the record limit before the idle timeout stopped it.
      expect(server.sent.get('/list/projects')!).toBeGreaterThan(4 * MiB);
      expect(run.output).toContain('sync.idle_timeout_seconds');
      expectBounded(run, s.db, 5);
    } finally {
      s.cleanup();
    }
  });

  it('fails a run whose body trickles, by the idle timeout, with nothing left running', async () => {
    server.on(
      '/list/projects',
      trickle('[', (i) => project(i), 200),
    );
    const s = setup();
    try {
      const run = await sync(s, 'projects');
      expect(run.code).not.toBe(0);
      expect(lastRun(s.db, 'projects')).toMatchObject({ status: 'failed' });
      expect(lastRun(s.db, 'projects').error, run.output.slice(-1500)).toMatch(/sync\.idle_timeout_seconds/);
      expect(query(s.db, "SELECT id FROM sync_runs WHERE status = 'running'")).toEqual([]);
      expectBounded(run, s.db, 5);
    } finally {
      s.cleanup();
    }
  });

  it('fails a run that keeps committing but never ends, by the deadline; the checkpoint is kept', async () => {
    // Streamed at once (tiny buffer), a batch of 100 records every ~2 s: never idle, never done.
    server.on(
      '/list/projects',
      trickle('[', (i) => project(i), 20),
    );
    const s = setup({ operator: 'max_body_bytes = 1024', sync: 'run_deadline_seconds = 7' });
    try {
      const run = await sync(s, 'projects');
      expect(run.code).not.toBe(0);
      const last = lastRun(s.db, 'projects');
      expect(last.status).toBe('failed');
      expect(last.error, run.output.slice(-1500)).toMatch(
        /^projects: not finished after 7 s \(sync\.run_deadline_seconds\)/,
      );
      expect(last.fetched).toBeGreaterThan(0);
      expect(query(s.db, "SELECT resource FROM sync_checkpoints WHERE resource = 'projects'")).toHaveLength(
        1,
      );
      expectBounded(run, s.db, 5);
    } finally {
      s.cleanup();
    }
  });

  it('stops an endless list at a multiple of the mirror before it fills the disk', async () => {
    const s = setup();
    try {
      // An honest first sync: 20 projects.
      server.on('/list/projects', json(`[${Array.from({ length: 20 }, (_, i) => project(i)).join(',')}]`));
      expect((await sync(s, 'projects')).code).toBe(0);
      // Then a body that never ends, each record new and well-formed.
      const batch = (i: number) =>
        Buffer.from(Array.from({ length: 100 }, (_, j) => `,${project(1000 + i * 100 + j, 300)}`).join(''));
      server.on('/list/projects', streamed(`[${project(999)}`, batch, Infinity));
      const run = await sync(s, 'projects');
      expect(run.code).not.toBe(0);
      const last = lastRun(s.db, 'projects');
      expect(last.status).toBe('failed');
      expect(last.error).toMatch(
        /the operator sent more than 10000 records in one run \(sync\.max_records_factor/,
      );
      const [{ n }] = query<{ n: number }>(s.db, 'SELECT count(*) AS n FROM projects') as [{ n: number }];
      // Cut within one batch of the cap (batches are page_size or 100 records).
      expect(n).toBeLessThanOrEqual(20 + 10_000 + 100);
      expectBounded(run, s.db, 30);
    } finally {
      s.cleanup();
    }
  });

  it('stores at most max_response_bytes of five 50 MB /notify answers, marked as cut', async () => {
    // The dispatcher child is another command than the syncs above (it loads more): its own honest
    // run, five small answers, is the baseline here.
    server.on('/integration/v1/notify', json({ accepted: true }));
    const honest = await dispatchFive('honest');
    expect(honest.responses.every((r) => r === '{"accepted":true}')).toBe(true);
    server.on(
      '/integration/v1/notify',
      streamed('{"accepted":true,"echo":"', Buffer.alloc(64 * 1024, 0x61), 50 * MiB, '"}'),
    );
    const big = await dispatchFive('big-answer');
    for (const response of big.responses) {
      expect(response.startsWith('{"accepted":true,"echo":"aaaa')).toBe(true);
      expect(response.endsWith(truncatedMarker(MiB))).toBe(true);
      expect(response.length).toBeLessThanOrEqual(MiB + truncatedMarker(MiB).length);
    }
    expect(big.run.rssMb, big.run.output.slice(-2000)).toBeLessThan(honest.run.rssMb + RSS_MARGIN_MB);
    expect(big.dbBytes).toBeLessThan(12 * MiB);
  });
});
