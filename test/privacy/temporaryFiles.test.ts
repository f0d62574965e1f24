import { mkdirSync, watch } from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Simulator, startSimulator } from '../../src/simulator/index.js';
import { tempDir } from '../helpers/context.js';
import { apiCaller } from '../helpers/http.js';
import { daemonEnv, daemonToml, spawnCli, until, untilEvent, writeToml } from '../ops/child.js';
import { transfer } from '../outbox/fixtures.js';
import { hostilePeople } from './leaks.js';

/**
 * SQLite writes the pages a savepoint changes, past 64 KiB of them, to an unlinked file in its
 * temporary directory: copies of outbox rows, personal fields too, outside the database file, where
 * neither `secure_delete` nor the scrub's WAL purge reaches (docs/outbox.md). Each task of the group
 * commit runs in a savepoint, and a group of settles passed that bound. A real daemon (`vcu-sync
 * run`, the dispatcher in its thread) enqueues and drains operations carrying personal data, with
 * SQLite's temporary directory (`SQLITE_TMPDIR`) pointed at a folder watched for any file made in it.
 */
const OPERATIONS = 400;
/** Requests in flight at once, so that enqueues share groups as they do under load. */
const CLIENTS = 16;
const { dir, cleanup } = tempDir('vcu-sync-tmpfiles-');
const sqliteTmp = path.join(dir, 'sqlite-tmp');
let sim: Simulator;

beforeAll(async () => {
  mkdirSync(sqliteTmp);
  sim = await startSimulator({ projects: 2, issuances: 2, units: 2, webhook: { policy: 'none' } });
});
afterAll(async () => {
  await sim.close();
  cleanup();
});

describe('the group commit leaves no copy of a row in temporary files', () => {
  it(`${OPERATIONS} operations with personal data enqueued and drained make no file in SQLite's temporary directory`, async () => {
    const made: string[] = [];
    const watcher = watch(sqliteTmp, (_event, name) => made.push(String(name)));
    const toml = daemonToml({ onStartup: false }).replace('concurrency = 4', 'concurrency = 16');
    expect(toml).toContain('concurrency = 16');
    const env = daemonEnv(dir, sim.url, writeToml(dir, toml), { SQLITE_TMPDIR: sqliteTmp });
    const daemon = spawnCli(['run'], env);
    try {
      await untilEvent(daemon, 'daemon.ready');
      const listen = daemon.events().find((e) => e.event === 'api.listening')?.listen as string;
      const call = apiCaller(`http://${listen}`, env.VCU_SYNC_API_TOKEN!);
      let next = 0;
      const client = async () => {
        while (next < OPERATIONS) {
          const i = next++;
          const body = { ...transfer(`tmpfiles-${i}`, { unitId: 50_000 + i }), ...hostilePeople(i) };
          const res = await call('POST', '/v1/operations', body);
          expect(res.status, res.text).toBe(201);
        }
      };
      await Promise.all(Array.from({ length: CLIENTS }, client));
      const reader = new Database(path.join(dir, 'vcu.db'), { readonly: true, fileMustExist: true });
      try {
        const accepted = reader.prepare("SELECT count(*) FROM outbox WHERE state = 'accepted'").pluck();
        await until(
          () => `every operation accepted; output:\n${daemon.output().slice(-2000)}`,
          () => accepted.get() === OPERATIONS,
          120_000,
        );
      } finally {
        reader.close();
      }
      daemon.child.kill('SIGTERM');
      expect(await daemon.exited, daemon.output().slice(-3000)).toBe(0);
    } finally {
      watcher.close();
      if (daemon.child.exitCode === null) daemon.child.kill('SIGKILL');
    }
    expect(made).toEqual([]);
  });
});
