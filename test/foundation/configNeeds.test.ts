import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.js';
import { missingSettings } from '../../src/config/configNeeds.js';
import { cliArgs, runNode } from '../helpers/cli.js';
import { tempDir } from '../helpers/context.js';

const { dir, cleanup } = tempDir();
afterAll(cleanup);

const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const URL = 'http://127.0.0.1:1';
const ALL_OFF = {
  'sync.on_startup': false,
  'sync.schedule': { projects: 'off', issuances: 'off', units: 'off', custody: 'off' },
};

/** The keys the lines of missingSettings name, in order. */
function missingKeys(overrides: Record<string, unknown>, command: 'run' | 'sync'): string[] {
  const config = loadConfig({ env: {}, overrides });
  return missingSettings(config, command).map((line) => line.split(' ')[0]!);
}

describe('settings each command needs', () => {
  // [what, overrides, command, keys named]
  const cases: Array<[string, Record<string, unknown>, 'run' | 'sync', string[]]> = [
    ['run, nothing set', {}, 'run', ['operator.url', 'operator.api_key', 'webhook.secrets']],
    [
      'run, all set',
      { 'operator.url': URL, 'operator.api_key': 'k-1', 'webhook.secrets': [SECRET] },
      'run',
      [],
    ],
    ['run, no key', { 'operator.url': URL, 'webhook.secrets': [SECRET] }, 'run', ['operator.api_key']],
    [
      'run, no key, syncs off but /notify carries the key',
      { 'operator.url': URL, 'webhook.secrets': [SECRET], ...ALL_OFF },
      'run',
      ['operator.api_key'],
    ],
    [
      'run, no key, only the start-up sync on',
      {
        'operator.url': URL,
        'webhook.secrets': [SECRET],
        'operator.auth_on_notify': false,
        ...ALL_OFF,
        'sync.on_startup': true,
      },
      'run',
      ['operator.api_key'],
    ],
    [
      'run, no key, one schedule on',
      {
        'operator.url': URL,
        'webhook.secrets': [SECRET],
        'operator.auth_on_notify': false,
        ...ALL_OFF,
        'sync.schedule': { projects: 'off', issuances: 'off', units: '*/5 * * * *', custody: 'off' },
      },
      'run',
      ['operator.api_key'],
    ],
    [
      'run, no key needed: no sync on its own and /notify without the key',
      { 'operator.url': URL, 'webhook.secrets': [SECRET], 'operator.auth_on_notify': false, ...ALL_OFF },
      'run',
      [],
    ],
    [
      'run, webhooks unsigned by choice',
      { 'operator.url': URL, 'operator.api_key': 'k-1', 'webhook.scheme': 'none' },
      'run',
      [],
    ],
    [
      'run, hmac without a secret',
      { 'operator.url': URL, 'operator.api_key': 'k-1', 'webhook.scheme': 'hmac' },
      'run',
      ['webhook.secrets'],
    ],
    [
      'run, token without a secret',
      { 'operator.url': URL, 'operator.api_key': 'k-1', 'webhook.scheme': 'token' },
      'run',
      ['webhook.secrets'],
    ],
    ['sync, nothing set', {}, 'sync', ['operator.url', 'operator.api_key']],
    [
      'sync, no key, even with every schedule off',
      { 'operator.url': URL, ...ALL_OFF },
      'sync',
      ['operator.api_key'],
    ],
    ['sync, no url', { 'operator.api_key': 'k-1' }, 'sync', ['operator.url']],
    ['sync, no webhook secret needed', { 'operator.url': URL, 'operator.api_key': 'k-1' }, 'sync', []],
  ];
  it.each(cases)('%s', (_what, overrides, command, keys) => {
    expect(missingKeys(overrides, command)).toEqual(keys);
  });

  it('names, for each setting, the variable and credential that set it', () => {
    const lines = missingSettings(loadConfig({ env: {} }), 'run');
    expect(lines[0]).toMatch(/^operator\.url is not set \(config file, or VCU_SYNC_OPERATOR_URL\)/);
    expect(lines[1]).toMatch(
      /^operator\.api_key is not set \(VCU_SYNC_API_KEY, VCU_SYNC_API_KEY_FILE or the credential api-key\)/,
    );
    expect(lines[2]).toMatch(
      /^webhook\.secrets is empty \(VCU_SYNC_WEBHOOK_SECRET, VCU_SYNC_WEBHOOK_SECRET_FILE or the credential webhook-secret\)/,
    );
  });
});

describe('config check, run and sync refuse a configuration missing what they need', () => {
  const cli = (args: string[], env: Record<string, string>) =>
    runNode(cliArgs(args), { HOME: dir, VCU_SYNC_DB: path.join(dir, 'never.db'), ...env }, dir);

  it('config check: one line per missing setting, exit 78, and says nothing is valid', () => {
    const { code, stdout, stderr } = cli(['config', 'check'], {});
    expect(code).toBe(78);
    expect(stdout).toBe('');
    const lines = stderr.trim().split('\n');
    expect(lines).toHaveLength(3);
    expect(lines[0]).toMatch(/^vcu-sync: config: operator\.url is not set .*VCU_SYNC_OPERATOR_URL/);
    expect(lines[1]).toMatch(/^vcu-sync: config: operator\.api_key is not set .*VCU_SYNC_API_KEY/);
    expect(lines[2]).toMatch(/^vcu-sync: config: webhook\.secrets is empty .*VCU_SYNC_WEBHOOK_SECRET/);
    expect(stderr).not.toMatch(/valid/);
  });

  it('config check: valid once they are set, with a note when the API has no token', () => {
    const { code, stderr } = cli(['config', 'check'], {
      VCU_SYNC_OPERATOR_URL: URL,
      VCU_SYNC_API_KEY: 'k-1234567',
      VCU_SYNC_WEBHOOK_SECRET: SECRET,
    });
    expect(code).toBe(0);
    expect(stderr.trim().split('\n')).toEqual([
      'vcu-sync: note: api.token (VCU_SYNC_API_TOKEN, VCU_SYNC_API_TOKEN_FILE or the credential api-token) is not set: the internal API refuses every call but /healthz',
      'vcu-sync: configuration is valid',
    ]);
  });

  it('run: refuses before it opens anything, naming the missing key and secret', () => {
    const { code, stderr } = cli(['run'], { VCU_SYNC_OPERATOR_URL: URL });
    expect(code).toBe(78);
    const lines = stderr.trim().split('\n');
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/^vcu-sync: config: operator\.api_key is not set/);
    expect(lines[1]).toMatch(/^vcu-sync: config: webhook\.secrets is empty/);
    expect(cli(['status'], {}).stdout).toMatch(/does not exist/);
  });

  it('sync: names the missing API key, without creating the database', () => {
    const { code, stderr } = cli(['sync', 'projects'], { VCU_SYNC_OPERATOR_URL: URL });
    expect(code).toBe(78);
    expect(stderr.trim()).toMatch(
      /^vcu-sync: config: operator\.api_key is not set \(VCU_SYNC_API_KEY, VCU_SYNC_API_KEY_FILE or the credential api-key\): every read/,
    );
    expect(cli(['status'], {}).code).toBe(2);
  });
});
