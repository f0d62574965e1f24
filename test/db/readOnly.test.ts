import { chmodSync, chownSync, existsSync } from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Simulator, startSimulator } from '../../src/simulator/index.js';
import { openDatabase } from '../../src/sqlite/open.js';
import { tempDir } from '../helpers/context.js';
import { until } from '../ops/child.js';
import { PERSONAL, transfer } from '../outbox/fixtures.js';
import { startDaemonChild } from './daemonChild.js';

let sim: Simulator;
const cleanups: Array<() => void> = [];

beforeAll(async () => {
  sim = await startSimulator({ projects: 5, issuances: 5, units: 5, webhook: { policy: 'none' } });
});
afterAll(async () => {
  await sim.close();
  for (const c of cleanups) c();
});

/**
 * File permissions do not stop root: as root, the daemon runs as nobody, so a read-only file is
 * read-only for real (no mount or capability needed, the same test as an unprivileged user).
 */
const ROOT = process.getuid?.() === 0;
const AS = ROOT ? { uid: 65534, gid: 65534 } : undefined;

function setOwnerAndMode(files: string[], mode: number): void {
  for (const f of files.filter((x) => existsSync(x))) {
    if (AS) chownSync(f, AS.uid, AS.gid);
    chmodSync(f, mode);
  }
}

/**
 * Polls /readyz until its one reason is `reason`; every answer meanwhile must be a 503 (the daemon's
 * own worker may hold the write lock for a moment, which is a reason of its own).
 */
async function expectNotReadyWith(base: string, reason: string): Promise<void> {
  let last: unknown;
  await until(
    () => `/readyz naming ${reason} (last: ${JSON.stringify(last)})`,
    async () => {
      const res = await fetch(`${base}/readyz`);
      last = await res.json();
      expect(res.status, JSON.stringify(last)).toBe(503);
      return JSON.stringify(last) === JSON.stringify({ ready: false, reasons: [reason] });
    },
  );
}

describe('the database file is read-only', () => {
  it('writes answer 503 + Retry-After, /readyz 503 database-read-only, status critical with SQLITE_READONLY; writable again and restarted, all is stored', async () => {
    const { dir, cleanup } = tempDir('vcu-sync-ro-');
    cleanups.push(cleanup);
    chmodSync(dir, 0o777);
    const file = path.join(dir, 'vcu.db');
    openDatabase(file).close();
    const files = [file, `${file}-wal`, `${file}-shm`];
    setOwnerAndMode(files, 0o444);

    const daemon = await startDaemonChild(dir, sim.url, { as: AS });
    // Not ready, with the cause, before any write was tried and after: every probe finds it.
    for (const when of ['before', 'after']) {
      if (when === 'after') {
        const refused = await daemon.call('POST', '/v1/operations', transfer('ro-1'));
        expect(refused.status, refused.text).toBe(503);
        expect(refused.headers.get('retry-after')).toBe('30');
        expect(refused.json.error).toContain('SQLITE_READONLY');
      }
      await expectNotReadyWith(
        daemon.base,
        'database not writable: database-read-only (SQLITE_READONLY: attempt to write a readonly database)',
      );
    }
    expect((await daemon.call('GET', '/v1/operations')).status).toBe(200);

    expect((await fetch(`${daemon.base}/healthz`)).status).toBe(200);
    const status = await daemon.call('GET', '/status');
    expect(status.status).toBe(503);
    const problem = status.json.problems.find((p: { code: string }) => p.code === 'database-write-failed');
    expect(problem?.message).toContain('SQLITE_READONLY: attempt to write a readonly database');
    for (const value of Object.values(PERSONAL)) {
      expect(status.text).not.toContain(value);
      expect(daemon.cli.output()).not.toContain(value);
    }
    expect(await daemon.stop()).toBe(0);

    // The operator's fix: the files writable by the service user again, then a restart.
    setOwnerAndMode(files, 0o600);
    const again = await startDaemonChild(dir, sim.url, { as: AS });
    const stored = await again.call('POST', '/v1/operations', transfer('ro-1'));
    expect(stored.status, stored.text).toBe(201);
    await until('the operation accepted by the operator', () =>
      sim.notifications.some((n) => n.ref === 'ro-1'),
    );
    let lastReadyz = '';
    await until(
      () => `/readyz 200 after the restart (last: ${lastReadyz})`,
      async () => {
        const res = await fetch(`${again.base}/readyz`);
        lastReadyz = await res.text();
        return res.status === 200;
      },
    );
    const after = await again.call('GET', '/status');
    expect(after.json.problems.map((p: { code: string }) => p.code)).not.toContain('database-write-failed');
    expect(await again.stop()).toBe(0);
    const db = new Database(file, { readonly: true });
    expect(
      db.prepare("SELECT state FROM outbox WHERE marketplaceTransactionRef = 'ro-1'").pluck().get(),
    ).toBe('accepted');
    db.close();
  });
});
