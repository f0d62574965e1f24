import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { cliArgs, runNode } from '../helpers/cli.js';
import { tempDir } from '../helpers/context.js';

const { dir, cleanup } = tempDir();
afterAll(cleanup);

/** Runs the real CLI in a child process with a clean environment. */
const cli = (args: string[], env: Record<string, string> = {}) =>
  runNode(cliArgs(args), { HOME: dir, ...env }, dir);

describe('vcu-sync command line', () => {
  it('lists every contract command in --help', () => {
    const { code, stdout } = cli(['--help']);
    expect(code).toBe(0);
    for (const command of [
      'run',
      'sync',
      'status',
      'schema',
      'enqueue',
      'outbox',
      'simulator',
      'demo',
      'db',
      'config',
    ]) {
      expect(stdout).toMatch(new RegExp(`^\\s+${command}\\b`, 'm'));
    }
  });

  it('answers a config error with one line naming the key and exit 78, no stack trace', () => {
    const file = path.join(dir, 'bad.toml');
    writeFileSync(file, '[outbox]\nconcurency = 3\n');
    const { code, stderr } = cli(['config', 'check', '--config', file]);
    expect(code).toBe(78);
    expect(stderr.trim().split('\n')).toEqual([
      'vcu-sync: config: unknown key outbox.concurency (did you mean outbox.concurrency?)',
    ]);
  });

  it('answers an unreadable secret file with one line and a non-zero exit', () => {
    const { code, stderr } = cli(['config', 'check'], {
      VCU_SYNC_WEBHOOK_SECRET_FILE: path.join(dir, 'nope'),
    });
    expect(code).toBe(78);
    expect(stderr.trim()).toBe(
      `vcu-sync: config: VCU_SYNC_WEBHOOK_SECRET_FILE: cannot read ${path.join(dir, 'nope')} (ENOENT)`,
    );
  });

  it('answers a database path that cannot be written with one line and a non-zero exit', () => {
    const { code, stderr } = cli(['db', 'migrate'], {
      VCU_SYNC_DB: path.join(dir, 'missing', 'deeper', 'x.db'),
    });
    expect(code).toBe(1);
    expect(stderr.trim().split('\n')).toHaveLength(1);
    expect(stderr).toMatch(/^vcu-sync: database: cannot open .*x\.db: folder .* does not exist/);
  });

  it('prints the effective configuration with secrets masked', () => {
    const { code, stdout } = cli(['config', 'check'], {
      VCU_SYNC_API_KEY: 'super-secret-key-1',
      VCU_SYNC_OPERATOR_URL: 'http://127.0.0.1:1',
      VCU_SYNC_WEBHOOK_SECRET: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
    });
    expect(code).toBe(0);
    expect(stdout).not.toContain('MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw');
    expect(stdout).not.toContain('super-secret-key-1');
    expect(JSON.parse(stdout).operator).toMatchObject({ url: 'http://127.0.0.1:1', api_key: '********' });
  });

  it('migrates a new database and backs it up to a file that opens with the same tables', () => {
    const env = { VCU_SYNC_DB: path.join(dir, 'cli.db') };
    expect(cli(['db', 'migrate'], env).code).toBe(0);
    const backup = cli(['db', 'backup', path.join(dir, 'cli-copy.db')], env);
    expect(backup.code).toBe(0);
    expect(backup.stdout).toMatch(/backup written to .*cli-copy\.db/);
    const again = cli(['db', 'backup', path.join(dir, 'cli-copy.db')], env);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/exists already/);
  });

  it('refuses to run without an operator URL, naming the key', () => {
    const { code, stderr } = cli(['run'], { VCU_SYNC_DB: path.join(dir, 'run.db') });
    expect(code).toBe(78);
    expect(stderr).toMatch(/operator\.url is not set/);
  });

  it('names a bad simulator flag', () => {
    const { code, stderr } = cli(['simulator', '--units', 'many']);
    expect(code).toBe(64);
    expect(stderr.trim()).toBe(
      'vcu-sync: simulator: --units: expected an integer from 0 to 9007199254740991, got "many"',
    );
  });
});
