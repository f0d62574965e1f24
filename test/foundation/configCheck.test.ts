import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { cliArgs, runNode } from '../helpers/cli.js';
import { tempDir } from '../helpers/context.js';

/** `vcu-sync config check` prints the store in use: PostgreSQL's URL (masked) without SQLite's path. */

const { dir, cleanup } = tempDir('vcu-sync-configcheck-');
afterAll(cleanup);

const NEEDS = {
  HOME: dir,
  VCU_SYNC_OPERATOR_URL: 'http://127.0.0.1:1',
  VCU_SYNC_API_KEY: 'k-config-check',
  VCU_SYNC_WEBHOOK_SECRET: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
};

describe('vcu-sync config check', () => {
  it('with database.url set: the URL with its password masked, no database.path', () => {
    const { code, stdout, stderr } = runNode(
      cliArgs(['config', 'check']),
      { ...NEEDS, VCU_SYNC_DATABASE_URL: 'postgres://vcu:pg-pass-7731@db.internal:5432/vcu' },
      dir,
    );
    expect(code, stderr).toBe(0);
    expect(stdout).not.toContain('pg-pass-7731');
    const printed = JSON.parse(stdout) as { database: Record<string, unknown> };
    expect(printed.database.url).toBe('postgres://vcu:********@db.internal:5432/vcu');
    expect(printed.database).not.toHaveProperty('path');
  });

  it('on SQLite: database.path as resolved', () => {
    const file = path.join(dir, 'x.db');
    const { code, stdout } = runNode(cliArgs(['config', 'check']), { ...NEEDS, VCU_SYNC_DB: file }, dir);
    expect(code).toBe(0);
    const printed = JSON.parse(stdout) as { database: Record<string, unknown> };
    expect(printed.database.path).toBe(file);
    expect(printed.database).not.toHaveProperty('url');
  });
});
