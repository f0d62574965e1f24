import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Writable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/common/errors.js';
import { createLogger } from '../../src/common/log.js';
import { scrubText } from '../../src/common/redact.js';
import { loadConfig, maskedConfig } from '../../src/config/config.js';
import { tempDir } from '../helpers/context.js';

const PASSWORD = 's3cr%2Ft-pg-pass';
const SENT_PASSWORD = 's3cr/t-pg-pass';
const URL_ = `postgres://vcu_sync:${PASSWORD}@db.internal:5432/vcu_sync?sslmode=verify-full`;

function problemsOf(fn: () => unknown): string[] {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return [...(err as ConfigError).problems];
  }
  throw new Error('expected a ConfigError');
}

describe('database.url', () => {
  const cleanups: Array<() => void> = [];
  const temp = () => {
    const t = tempDir();
    cleanups.push(t.cleanup);
    return t.dir;
  };
  afterEach(() => {
    for (const cleanup of cleanups.splice(0)) cleanup();
  });

  it('is unset by default: SQLite at database.path', () => {
    const config = loadConfig({ env: {} });
    expect(config.database.url).toBeUndefined();
  });

  it('comes from the file, VCU_SYNC_DATABASE_URL, _FILE, and the database-url credential, in rising precedence', () => {
    const dir = temp();
    const file = path.join(dir, 'c.toml');
    writeFileSync(file, `[database]\nurl = "postgres://file@h/db"\n`);
    expect(loadConfig({ file, env: {} }).database.url).toBe('postgres://file@h/db');
    expect(loadConfig({ file, env: { VCU_SYNC_DATABASE_URL: URL_ } }).database.url).toBe(URL_);
    writeFileSync(path.join(dir, 'url'), `postgresql://from-file@h/db\n`);
    expect(
      loadConfig({ file, env: { VCU_SYNC_DATABASE_URL_FILE: path.join(dir, 'url') } }).database.url,
    ).toBe('postgresql://from-file@h/db');
    const creds = path.join(dir, 'creds');
    mkdirSync(creds);
    writeFileSync(path.join(creds, 'database-url'), `${URL_}\n`);
    expect(
      loadConfig({
        file,
        env: { VCU_SYNC_DATABASE_URL: 'postgres://env@h/db', CREDENTIALS_DIRECTORY: creds },
      }).database.url,
    ).toBe(URL_);
  });

  it('refuses anything but a postgres(ql):// URL or an unknown sslmode, naming the key and never the value', () => {
    for (const bad of ['mysql://u:hunter22@h/db', 'not a url hunter22', '/var/lib/db.sqlite']) {
      const problems = problemsOf(() => loadConfig({ env: { VCU_SYNC_DATABASE_URL: bad } }));
      expect(problems).toEqual(['database.url: expected a postgres:// or postgresql:// URL']);
    }
    expect(
      problemsOf(() =>
        loadConfig({ env: { VCU_SYNC_DATABASE_URL: 'postgres://u:hunter22@h/db?sslmode=yes' } }),
      ),
    ).toEqual([
      'database.url: sslmode must be one of disable, allow, prefer, require, verify-ca, verify-full',
    ]);
    expect(
      problemsOf(() =>
        loadConfig({ env: { VCU_SYNC_DATABASE_URL: URL_, VCU_SYNC_DATABASE_URL_FILE: '/x' } }),
      ),
    ).toEqual(['set VCU_SYNC_DATABASE_URL or VCU_SYNC_DATABASE_URL_FILE, not both']);
  });

  it('masks the password (userinfo or password= parameter) in config check and nothing else', () => {
    const config = loadConfig({ env: { VCU_SYNC_DATABASE_URL: URL_ } });
    expect(maskedConfig(config).database.url).toBe(
      'postgres://vcu_sync:********@db.internal:5432/vcu_sync?sslmode=verify-full',
    );
    expect(config.database.url).toBe(URL_);
    const inQuery = loadConfig({
      env: { VCU_SYNC_DATABASE_URL: 'postgres://vcu_sync@db.internal/vcu_sync?password=qwerty-pg-99' },
    });
    const printed = JSON.stringify(maskedConfig(inQuery));
    expect(printed).not.toContain('qwerty-pg-99');
    expect(printed).toContain('password=********');
  });

  it('keeps the URL and its password, as written and as sent, out of logs and error text', () => {
    loadConfig({ env: { VCU_SYNC_DATABASE_URL: URL_ } });
    const lines: string[] = [];
    const destination = new Writable({
      write(chunk, _enc, done) {
        lines.push(String(chunk));
        done();
      },
    });
    const log = createLogger({ level: 'debug', destination });
    log.info({ event: 'test.db', target: URL_ }, `connecting to ${URL_}`);
    log.error({ event: 'test.db', err: new Error(`auth failed with ${SENT_PASSWORD}`) }, 'failed');
    log.warn({ event: 'test.db', detail: { nested: [`pw=${PASSWORD}`] } });
    const all = lines.join('');
    expect(lines).toHaveLength(3);
    for (const secret of [URL_, PASSWORD, SENT_PASSWORD]) expect(all).not.toContain(secret);
    expect(scrubText(`psql ${URL_}`)).not.toContain('s3cr');
  });
});
