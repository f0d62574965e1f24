import { chmodSync, mkdirSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { lockFileProblem } from '../../src/sqlite/lockProblem.js';
import { tempDir } from '../helpers/context.js';
import { daemonEnv, daemonToml, spawnCli, writeToml } from './child.js';

/**
 * `vcu-sync run` on a database in a directory the service user cannot write: the one line names
 * that directory, why the daemon writes there (its lock file) and what to fix (owner and mode, or
 * database.path), not a bare "unable to open database file" about a file nobody configured.
 */

const { dir: root, cleanup } = tempDir('vcu-sync-lockdir-');
afterAll(cleanup);

/** File permissions do not stop root: as root, the daemon runs as nobody, so the directory is read-only for real. */
const AS = process.getuid?.() === 0 ? { uid: 65534, gid: 65534 } : undefined;

describe('the database directory is not writable', () => {
  it('run names the directory, the lock file, database.path and VCU_SYNC_DB; exit 1; nothing created', async () => {
    chmodSync(root, 0o755);
    const readOnly = path.join(root, 'ro');
    mkdirSync(readOnly, { mode: 0o555 });
    chmodSync(readOnly, 0o555);
    const toml = writeToml(root, daemonToml({ onStartup: false }));
    const child = spawnCli(['run'], { HOME: root, ...daemonEnv(readOnly, 'http://127.0.0.1:1', toml) }, AS);
    const code = await child.exited;
    const output = child.output();
    expect(code, output).toBe(1);
    expect(output.trim().split('\n')).toEqual([
      `vcu-sync: database: cannot write in the database's directory ${readOnly} (the daemon keeps its lock file vcu.db.lock there, beside database.path): check the directory's owner and mode for the service user, or set database.path / VCU_SYNC_DB to a writable place`,
    ]);
    expect(readdirSync(readOnly)).toEqual([]);
  });

  it('any other lock failure keeps naming the lock file and what SQLite said', () => {
    const err = Object.assign(new Error('file is not a database'), { code: 'SQLITE_NOTADB' });
    expect(lockFileProblem('/var/lib/x/vcu.db.lock', err, 'cannot lock /var/lib/x/vcu.db.lock').message).toBe(
      'database: cannot lock /var/lib/x/vcu.db.lock: file is not a database',
    );
  });
});
