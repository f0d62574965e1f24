import {
  existsSync,
  linkSync,
  mkdirSync,
  readdirSync,
  symlinkSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { handBackDeadOwners } from '../../src/app/sqliteDaemon.js';
import { EXIT_CONFIG, UserError } from '../../src/common/errors.js';
import { claimOperations } from '../../src/operations/claim.js';
import { type Simulator, startSimulator } from '../../src/simulator/index.js';
import { driveSqlite } from '../../src/sqlite/commitQueue.js';
import { posixWriteLockHolders } from '../../src/sqlite/lockHolders.js';
import {
  acquireOwnership,
  EXIT_DATABASE_OWNED,
  fileIdentity,
  fileLockPathFor,
  lockPathFor,
} from '../../src/sqlite/ownership.js';
import { tempDir, testContext } from '../helpers/context.js';
import { apiCaller } from '../helpers/http.js';
import { freePort } from '../helpers/net.js';
import { capturingLogger, enqueueOperation, transfer } from '../outbox/fixtures.js';
import { type CliChild, daemonEnv, daemonToml, spawnCli, until, untilEvent, writeToml } from './child.js';

const TOKEN = 'ops-test-token-0123456789';
let sim: Simulator;
const dirs: Array<() => void> = [];

beforeAll(async () => {
  sim = await startSimulator({ projects: 12, webhook: { policy: 'none' } });
});
afterAll(async () => {
  await sim.close();
  for (const cleanup of dirs) cleanup();
});

function workDir(): string {
  const { dir, cleanup } = tempDir('vcu-sync-owner-');
  dirs.push(cleanup);
  return dir;
}

/** Expects a refused `vcu-sync run`: exit 75 and one line naming the database and the owner's pid. */
async function expectRefused(c: CliChild, dbFile: string, ownerPid: number): Promise<void> {
  const code = await c.exited;
  const lines = c.output().trim().split('\n');
  expect(code, c.output()).toBe(EXIT_DATABASE_OWNED);
  expect(lines).toEqual([
    `vcu-sync: database ${dbFile} is in use by another vcu-sync daemon (pid ${ownerPid}); only one daemon may run on a SQLite file`,
  ]);
}

describe('one daemon per SQLite file', () => {
  it('a second `vcu-sync run` exits 75 naming the database and pid; the first keeps serving; short commands work beside it', async () => {
    const dir = workDir();
    const dbFile = path.join(dir, 'vcu.db');
    const toml = writeToml(dir, daemonToml({ onStartup: false }));
    const port = await freePort();
    const first = spawnCli(['run'], daemonEnv(dir, sim.url, toml, { VCU_SYNC_LISTEN: `127.0.0.1:${port}` }));
    try {
      await untilEvent(first, 'daemon.ready');
      const firstOutput = first.output().length;

      // Its own free ports, so only the database can be what refuses it.
      const second = spawnCli(
        ['run'],
        daemonEnv(dir, sim.url, toml, { VCU_SYNC_LISTEN: `127.0.0.1:${await freePort()}` }),
      );
      await expectRefused(second, dbFile, first.child.pid!);

      // The first daemon is untouched: alive, nothing logged about it, still answering and delivering.
      expect(first.child.exitCode).toBeNull();
      expect(first.output().slice(firstOutput)).not.toMatch(/locked|busy|error/i);
      const api = apiCaller(`http://127.0.0.1:${port}`, TOKEN);
      expect((await api('GET', '/healthz', undefined, null)).status).toBe(200);
      expect((await api('POST', '/v1/operations', transfer('owner-1', { unitId: 97_001 }))).status).toBe(201);
      await until('owner-1 accepted', () => sim.notifications.some((n) => n.ref === 'owner-1'));
      await until('owner-1 recorded', () => {
        const db = new Database(dbFile, { readonly: true });
        try {
          const row = db
            .prepare('SELECT state FROM outbox WHERE marketplaceTransactionRef = ?')
            .get('owner-1') as { state: string } | undefined;
          return row?.state === 'accepted';
        } finally {
          db.close();
        }
      });

      // Short commands share the database with the running daemon.
      const env = daemonEnv(dir, sim.url, toml);
      const list = spawnCli(['outbox', 'list'], env);
      expect(await list.exited, list.output()).toBe(0);
      expect(list.output()).toContain('owner-1');
      const status = spawnCli(['status', '--json'], env);
      expect([0, 1, 2]).toContain(await status.exited);
      expect(JSON.parse(status.output()).status).toBeTypeOf('string');
      const sync = spawnCli(['sync', 'projects'], env);
      expect(await sync.exited, sync.output()).toBe(0);
      {
        const db = new Database(dbFile, { readonly: true });
        expect(db.prepare('SELECT COUNT(*) AS n FROM projects').get()).toEqual({ n: 12 });
        db.close();
      }
      expect((await api('GET', '/healthz', undefined, null)).status).toBe(200);
    } finally {
      first.child.kill('SIGTERM');
    }
    expect(await first.exited, first.output().slice(-3000)).toBe(0);
  });

  it('three daemons started at once on a new database: exactly one runs, the others name its pid', async () => {
    const dir = workDir();
    const dbFile = path.join(dir, 'vcu.db');
    const toml = writeToml(dir, daemonToml({ onStartup: false }));
    const starters = await Promise.all(
      [0, 1, 2].map(async () =>
        spawnCli(
          ['run'],
          daemonEnv(dir, sim.url, toml, { VCU_SYNC_LISTEN: `127.0.0.1:${await freePort()}` }),
        ),
      ),
    );
    try {
      await until(
        () => `one ready, two refused:\n${starters.map((s) => s.output().slice(-500)).join('\n---\n')}`,
        () =>
          starters.filter((s) => s.events().some((e) => e.event === 'daemon.ready')).length === 1 &&
          starters.filter((s) => s.child.exitCode !== null).length === 2,
      );
      const winner = starters.find((s) => s.child.exitCode === null)!;
      for (const loser of starters.filter((s) => s !== winner))
        await expectRefused(loser, dbFile, winner.child.pid!);
    } finally {
      for (const s of starters) if (s.child.exitCode === null) s.child.kill('SIGTERM');
    }
    for (const s of starters) expect([0, EXIT_DATABASE_OWNED]).toContain(await s.exited);
  });
});

/** What SQLite made beside `dbFile`: a -wal or -shm there means a connection opened it through that path. */
const sqliteFilesBeside = (dbFile: string) =>
  [`${dbFile}-wal`, `${dbFile}-shm`, `${dbFile}-journal`].filter(existsSync);

describe('one daemon per SQLite file, through hard links', () => {
  it('a second `vcu-sync run` through a hard link exits 75 naming the running daemon and opens nothing, also through a link in another folder', async () => {
    const dir = workDir();
    const dbFile = path.join(dir, 'vcu.db');
    const toml = writeToml(dir, daemonToml({ onStartup: false }));
    const port = await freePort();
    const first = spawnCli(['run'], daemonEnv(dir, sim.url, toml, { VCU_SYNC_LISTEN: `127.0.0.1:${port}` }));
    try {
      await untilEvent(first, 'daemon.ready');
      const api = apiCaller(`http://127.0.0.1:${port}`, TOKEN);
      expect((await api('POST', '/v1/operations', transfer('linked-1', { unitId: 97_101 }))).status).toBe(
        201,
      );

      // `ln vcu.db other.db` beside the live file, then a daemon on the new name.
      const other = path.join(dir, 'other.db');
      linkSync(dbFile, other);
      const starter = (db: string) =>
        spawnCli(['run'], daemonEnv(dir, sim.url, toml, { VCU_SYNC_DB: db, VCU_SYNC_LISTEN: `127.0.0.1:0` }));
      await expectRefused(starter(other), other, first.child.pid!);
      expect(sqliteFilesBeside(other)).toEqual([]);

      // A link in another folder of the same file system: its file lock would be over there, so
      // the file's second name is what refuses it, before anything is opened; the running daemon
      // is named from /proc (the lock file it holds open).
      const elsewhere = path.join(dir, 'elsewhere');
      mkdirSync(elsewhere);
      const far = path.join(elsewhere, 'far.db');
      linkSync(dbFile, far);
      await expectRefused(starter(far), far, first.child.pid!);
      expect(sqliteFilesBeside(far)).toEqual([]);
      expect(readdirSync(elsewhere).filter((f) => !f.endsWith('.lock'))).toEqual(['far.db']);

      // The running daemon never noticed: it serves and delivers.
      expect(first.child.exitCode).toBeNull();
      expect((await api('POST', '/v1/operations', transfer('linked-2', { unitId: 97_102 }))).status).toBe(
        201,
      );
      await until('both accepted by the operator', () =>
        ['linked-1', 'linked-2'].every((ref) => sim.notifications.some((n) => n.ref === ref)),
      );
      unlinkSync(other);
      unlinkSync(far);
    } finally {
      first.child.kill('SIGTERM');
    }
    expect(await first.exited, first.output().slice(-3000)).toBe(0);
    {
      const db = new Database(dbFile, { readonly: true });
      expect(db.pragma('quick_check', { simple: true })).toBe('ok');
      expect(
        db
          .prepare(`SELECT count(*) FROM outbox WHERE marketplaceTransactionRef LIKE 'linked-%'`)
          .pluck()
          .get(),
      ).toBe(2);
      db.close();
    }
  });
});

describe('acquireOwnership', () => {
  it('keys the file lock to the file: a hard link finds the same lock and is refused naming the owner; released, a file with two names is refused', async () => {
    const dir = workDir();
    const dbFile = path.join(dir, 'vcu.db');
    const owner = await acquireOwnership(dbFile);
    // The database is created for its identity, empty (SQLite takes it as a new database).
    expect(fileIdentity(dbFile)?.nlink).toBe(1n);
    const link = path.join(dir, 'link.db');
    linkSync(dbFile, link);
    expect(fileLockPathFor(link, fileIdentity(link)!)).toBe(owner.fileLockPath);
    const refused = await acquireOwnership(link).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect((refused as UserError).exitCode).toBe(EXIT_DATABASE_OWNED);
    expect((refused as UserError).message).toBe(
      `database ${link} is in use by another vcu-sync daemon (pid ${process.pid}); only one daemon may run on a SQLite file`,
    );
    owner.release();
    // No daemon runs, yet a second name is the next second WAL: refused until it is gone.
    const linked = await acquireOwnership(dbFile).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect((linked as UserError).exitCode).toBe(EXIT_CONFIG);
    expect((linked as UserError).message).toMatch(new RegExp(`^database ${dbFile} has 2 hard links; `));
    unlinkSync(link);
    const again = await acquireOwnership(dbFile);
    again.release();
  });

  it('refuses a second owner in the same process, by any path to the file; frees the file on release', async () => {
    const dir = workDir();
    const dbFile = path.join(dir, 'vcu.db');
    writeFileSync(dbFile, '');
    symlinkSync(dbFile, path.join(dir, 'alias.db'));
    const owner = await acquireOwnership(dbFile);
    for (const other of [dbFile, path.join(dir, 'alias.db'), path.join(dir, '.', 'vcu.db')]) {
      const refused = await acquireOwnership(other).then(
        () => undefined,
        (err: unknown) => err,
      );
      expect(refused).toBeInstanceOf(UserError);
      expect((refused as UserError).exitCode).toBe(EXIT_DATABASE_OWNED);
      expect((refused as UserError).message).toBe(
        `database ${other} is in use by another vcu-sync daemon (pid ${process.pid}); only one daemon may run on a SQLite file`,
      );
    }
    owner.release();
    owner.release();
    const again = await acquireOwnership(path.join(dir, 'alias.db'));
    expect(again.lockPath).toBe(lockPathFor(dbFile));
    again.release();
  });

  it('a file with two names and no daemon on either is refused with the line that finds them (exit 78)', async () => {
    const dir = workDir();
    const dbFile = path.join(dir, 'vcu.db');
    writeFileSync(dbFile, '');
    mkdirSync(path.join(dir, 'elsewhere'));
    const far = path.join(dir, 'elsewhere', 'far.db');
    linkSync(dbFile, far);
    for (const name of [dbFile, far]) {
      const refused = await acquireOwnership(name).then(
        () => undefined,
        (err: unknown) => err,
      );
      expect((refused as UserError).exitCode).toBe(EXIT_CONFIG);
      expect((refused as UserError).message).toBe(
        `database ${name} has 2 hard links; SQLite keys its -wal and -shm to the path, so a second path to the file corrupts it: remove the other links (find them with find <mount point> -xdev -samefile ${name}) and run every vcu-sync on one path`,
      );
    }
    expect(sqliteFilesBeside(dbFile)).toEqual([]);
    expect(sqliteFilesBeside(far)).toEqual([]);
  });

  it('reads the holders of POSIX write locks from /proc/locks, not readers, flock holders or waiters', () => {
    const text = [
      '1: POSIX  ADVISORY  WRITE 4242 00:2f:1234567 1073741824 1073742335',
      '1: -> POSIX  ADVISORY  WRITE 5151 00:2f:1234567 1073741824 1073742335',
      '2: POSIX  ADVISORY  READ 6262 00:2f:7654321 1073741826 1073742335',
      '3: FLOCK  ADVISORY  WRITE 7373 fd:00:99 0 EOF',
      '4: OFDLCK ADVISORY  WRITE -1 00:2f:5 0 EOF',
      '5: POSIX  ADVISORY  WRITE 4242 00:2f:42 0 EOF',
      '',
    ].join('\n');
    expect(posixWriteLockHolders(text)).toEqual([4242]);
  });

  it('a lock file that is not one gives one line naming it', async () => {
    const dir = workDir();
    const dbFile = path.join(dir, 'vcu.db');
    writeFileSync(lockPathFor(dbFile), 'not a database, just text that someone left here\n'.repeat(100));
    await expect(acquireOwnership(dbFile)).rejects.toThrow(
      new RegExp(`^database: cannot lock ${lockPathFor(dbFile)}: `),
    );
  });
});

describe('handBackDeadOwners (the SQLite liveness start)', () => {
  it('queues every claimed row again with its attempt refunded and leaves other rows alone', async () => {
    const { log, lines } = capturingLogger();
    const ctx = testContext();
    try {
      ctx.log = log;
      for (let i = 0; i < 6; i++) enqueueOperation(ctx, transfer(`dead-${i}`, { unitId: 98_000 + i }));
      const now = new Date().toISOString();
      const far = new Date(Date.now() + 600_000).toISOString();
      // Two dead processes held claims; one more row was accepted before they died.
      ctx.database.sqlite.transaction(() => {
        driveSqlite(
          ctx.database.sqlite,
          claimOperations({ owner: 'host:1:a', now, leaseUntil: far, limit: 2 }, undefined, false),
        );
        driveSqlite(
          ctx.database.sqlite,
          claimOperations({ owner: 'host:2:b', now, leaseUntil: far, limit: 2 }, undefined, false),
        );
      })();
      ctx.database.sqlite
        .prepare("UPDATE outbox SET state = 'accepted', lease_owner = NULL, lease_until = NULL WHERE id = 4")
        .run();
      await handBackDeadOwners(ctx);
      const rows = ctx.database.sqlite
        .prepare(
          'SELECT marketplaceTransactionRef AS ref, state, attempts, lease_owner, lease_until FROM outbox ORDER BY id',
        )
        .all();
      expect(rows).toEqual([
        { ref: 'dead-0', state: 'queued', attempts: 0, lease_owner: null, lease_until: null },
        { ref: 'dead-1', state: 'queued', attempts: 0, lease_owner: null, lease_until: null },
        { ref: 'dead-2', state: 'queued', attempts: 0, lease_owner: null, lease_until: null },
        { ref: 'dead-3', state: 'accepted', attempts: 1, lease_owner: null, lease_until: null },
        { ref: 'dead-4', state: 'queued', attempts: 0, lease_owner: null, lease_until: null },
        { ref: 'dead-5', state: 'queued', attempts: 0, lease_owner: null, lease_until: null },
      ]);
      const events = lines.map((l) => JSON.parse(l) as { event?: string; rows?: number; refs?: string[] });
      expect(events.filter((e) => e.event === 'outbox.released_at_start')).toEqual([
        expect.objectContaining({ rows: 3, refs: ['dead-0', 'dead-1', 'dead-2'] }),
      ]);
      // Nothing left to hand back: no second line.
      await handBackDeadOwners(ctx);
      expect(lines.filter((l) => l.includes('outbox.released_at_start'))).toHaveLength(1);
    } finally {
      ctx.dispose();
    }
  });
});
