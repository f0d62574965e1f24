import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/common/errors.js';
import { loadConfig, maskedConfig } from '../../src/config/config.js';
import { tempDir } from '../helpers/context.js';

const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';

describe('loadConfig', () => {
  const dirs: Array<() => void> = [];
  const temp = () => {
    const t = tempDir();
    dirs.push(t.cleanup);
    return t.dir;
  };
  afterEach(() => {
    for (const cleanup of dirs.splice(0)) cleanup();
  });

  function problemsOf(fn: () => unknown): string[] {
    try {
      fn();
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      return [...(err as ConfigError).problems];
    }
    throw new Error('expected a ConfigError');
  }

  it('gives every key its documented default with an empty environment', () => {
    const config = loadConfig({ env: {} });
    expect(config.api.listen).toBe('127.0.0.1:8787');
    expect(config.webhook.listen).toBe('127.0.0.1:8788');
    expect(config.webhook.scheme).toBe('standard-webhooks');
    expect(config.operator.auth).toBe('apikey');
    expect(config.database.path).toBe(path.join('.', 'vcu-sync.db'));
    expect(config.outbox.wire_spelling.retire).toBe('retire');
  });

  it('reads the TOML file and lets environment variables override it', () => {
    const dir = temp();
    const file = path.join(dir, 'c.toml');
    writeFileSync(
      file,
      '[operator]\nurl = "http://file.example"\nmarketplace_id = "m-file"\n[log]\nlevel = "debug"\n',
    );
    const config = loadConfig({
      env: {
        VCU_SYNC_CONFIG: file,
        VCU_SYNC_OPERATOR_URL: 'http://env.example',
        VCU_SYNC_LISTEN: '127.0.0.1:9999',
      },
    });
    expect(config.operator.url).toBe('http://env.example');
    expect(config.operator.marketplace_id).toBe('m-file');
    expect(config.log.level).toBe('debug');
    expect(config.api.listen).toBe('127.0.0.1:9999');
  });

  it('reads every contract environment variable', () => {
    const config = loadConfig({
      env: {
        VCU_SYNC_OPERATOR_URL: 'https://operator.example/base',
        VCU_SYNC_API_KEY: 'key-123456',
        VCU_SYNC_MARKETPLACE_ID: 'mkt-1',
        VCU_SYNC_DB: '/tmp/x.db',
        VCU_SYNC_LISTEN: '127.0.0.1:1',
        VCU_SYNC_API_TOKEN: 'token-123456',
        VCU_SYNC_WEBHOOK_LISTEN: '0.0.0.0:2',
        VCU_SYNC_WEBHOOK_SECRET: SECRET,
        VCU_SYNC_LOG_LEVEL: 'warn',
      },
    });
    expect(config.operator).toMatchObject({
      url: 'https://operator.example/base',
      api_key: 'key-123456',
      marketplace_id: 'mkt-1',
    });
    expect(config.database.path).toBe('/tmp/x.db');
    expect(config.api).toMatchObject({ listen: '127.0.0.1:1', token: 'token-123456' });
    expect(config.webhook).toMatchObject({ listen: '0.0.0.0:2', secrets: [SECRET] });
    expect(config.log.level).toBe('warn');
  });

  it('reads secrets from *_FILE variables and systemd credentials, credentials winning', () => {
    const dir = temp();
    writeFileSync(path.join(dir, 'key'), 'from-file-key\n');
    const creds = path.join(dir, 'creds');
    mkdirSync(creds);
    writeFileSync(path.join(creds, 'api-token'), 'from-credential-token\n');
    writeFileSync(
      path.join(creds, 'webhook-secret'),
      `${SECRET}\nwhsec_${Buffer.alloc(24, 7).toString('base64')}\n`,
    );
    const config = loadConfig({
      env: {
        VCU_SYNC_API_KEY_FILE: path.join(dir, 'key'),
        VCU_SYNC_API_TOKEN: 'env-token-1',
        CREDENTIALS_DIRECTORY: creds,
      },
    });
    expect(config.operator.api_key).toBe('from-file-key');
    expect(config.api.token).toBe('from-credential-token');
    expect(config.webhook.secrets).toHaveLength(2);
  });

  it('names an unknown key, a wrong type and a bad URL, all at once', () => {
    const dir = temp();
    const file = path.join(dir, 'c.toml');
    writeFileSync(file, '[operator]\nurl = "ftp://x"\nurll = "typo"\n[outbox]\nconcurrency = "four"\n');
    const problems = problemsOf(() => loadConfig({ env: { VCU_SYNC_CONFIG: file } }));
    expect(problems).toEqual(
      expect.arrayContaining([
        'unknown key operator.urll (did you mean operator.url?)',
        expect.stringMatching(/^operator\.url: expected an http\(s\) URL/),
        expect.stringMatching(/^outbox\.concurrency: /),
      ]),
    );
  });

  it('points at the line of a TOML syntax error', () => {
    const dir = temp();
    const file = path.join(dir, 'c.toml');
    writeFileSync(file, '[operator]\nurl = "http://x"\nbroken = \n');
    expect(problemsOf(() => loadConfig({ file, env: {} }))[0]).toMatch(/c\.toml line 3/);
  });

  it('names an unreadable secret file without showing any secret', () => {
    const dir = temp();
    expect(
      problemsOf(() => loadConfig({ env: { VCU_SYNC_API_KEY_FILE: path.join(dir, 'missing') } })),
    ).toEqual([`VCU_SYNC_API_KEY_FILE: cannot read ${path.join(dir, 'missing')} (ENOENT)`]);
    const unreadable = path.join(dir, 'folder');
    mkdirSync(unreadable);
    chmodSync(unreadable, 0o700);
    expect(problemsOf(() => loadConfig({ env: { VCU_SYNC_API_TOKEN_FILE: unreadable } }))[0]).toMatch(
      /^VCU_SYNC_API_TOKEN_FILE: cannot read .* \(EISDIR\)$/,
    );
  });

  it('refuses a variable and its _FILE twin together', () => {
    expect(
      problemsOf(() => loadConfig({ env: { VCU_SYNC_API_KEY: 'abcdefg', VCU_SYNC_API_KEY_FILE: '/x' } })),
    ).toEqual(['set VCU_SYNC_API_KEY or VCU_SYNC_API_KEY_FILE, not both']);
  });

  it('checks Standard Webhooks secrets and never echoes them', () => {
    const problems = problemsOf(() =>
      loadConfig({ env: { VCU_SYNC_WEBHOOK_SECRET: 'not-a-real-secret!!' } }),
    );
    expect(problems).toEqual(['webhook.secrets[0]: expected whsec_ followed by base64 of at least 16 bytes']);
    expect(problems.join()).not.toContain('not-a-real-secret');
  });

  it('masks every secret in the printed configuration', () => {
    const config = loadConfig({
      env: {
        VCU_SYNC_API_KEY: 'key-abcdef',
        VCU_SYNC_API_TOKEN: 'tok-abcdef',
        VCU_SYNC_WEBHOOK_SECRET: SECRET,
      },
    });
    const printed = JSON.stringify(maskedConfig(config));
    for (const secret of ['key-abcdef', 'tok-abcdef', SECRET]) expect(printed).not.toContain(secret);
    expect(config.operator.api_key).toBe('key-abcdef');
  });
});

describe('config/vcu-sync.example.toml', () => {
  const file = path.join(import.meta.dirname, '../../config/vcu-sync.example.toml');

  it('loads, and its values are the defaults', () => {
    expect(loadConfig({ file, env: {} })).toEqual(loadConfig({ env: {} }));
  });

  it('documents every key of the schema', () => {
    const text = readFileSync(file, 'utf8');
    const defaults = loadConfig({ env: {} }) as unknown as Record<string, Record<string, unknown>>;
    const missing: string[] = [];
    const walk = (table: Record<string, unknown>, prefix: string) => {
      for (const [key, value] of Object.entries(table)) {
        if (value && typeof value === 'object' && !Array.isArray(value)) {
          if (!text.includes(`[${prefix}${key}]`)) missing.push(`${prefix}${key}`);
          walk(value as Record<string, unknown>, `${prefix}${key}.`);
        } else if (!new RegExp(`^#? ?${key} =`, 'm').test(text)) {
          missing.push(`${prefix}${key}`);
        }
      }
    };
    walk(defaults, '');
    // Keys without a default (url, api_key, marketplace_id, token, hmac_timestamp_header) are shown commented.
    for (const key of ['url', 'api_key', 'marketplace_id', 'token', 'hmac_timestamp_header', 'path']) {
      expect(text).toMatch(new RegExp(`^# ${key} =`, 'm'));
    }
    expect(missing).toEqual([]);
  });
});
