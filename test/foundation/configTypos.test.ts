import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { closestName, editDistance } from '../../src/common/didYouMean.js';
import { ConfigError } from '../../src/common/errors.js';
import { KNOWN_VARIABLES, loadConfig, unknownVariableWarnings } from '../../src/config/config.js';
import { knownKeysAt } from '../../src/config/configKeys.js';
import { cliArgs, ROOT, runNode } from '../helpers/cli.js';
import { tempDir } from '../helpers/context.js';

/**
 * A typo names what was meant: a misspelled key in the file ("did you mean database?") and a
 * misspelled VCU_SYNC_* variable (a warning naming the closest one, instead of being ignored).
 */

const { dir, cleanup } = tempDir('vcu-sync-typos-');
afterAll(cleanup);

function problemsOf(toml: string): string[] {
  const file = path.join(dir, `c${Math.random().toString(36).slice(2)}.toml`);
  writeFileSync(file, toml);
  try {
    loadConfig({ file, env: {} });
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return [...(err as ConfigError).problems];
  }
  throw new Error('expected a ConfigError');
}

describe('did you mean', () => {
  it('counts edits, and finds a near name only (case aside), never a far one', () => {
    expect(editDistance('databse', 'database')).toBe(1);
    expect(editDistance('', 'abc')).toBe(3);
    expect(closestName('databse', ['database', 'api', 'status'])).toBe('database');
    expect(closestName('API', ['database', 'api'])).toBe('api');
    expect(closestName('colour', ['database', 'api'])).toBeUndefined();
    // Short names allow one edit: "ap" is api, "xy" is nothing.
    expect(closestName('ap', ['api', 'log'])).toBe('api');
    expect(closestName('xy', ['api', 'log'])).toBeUndefined();
  });

  it('knows the keys of every table, nested and in arrays of tables', () => {
    expect(knownKeysAt([])).toContain('database');
    expect(knownKeysAt(['outbox'])).toContain('concurrency');
    expect(knownKeysAt(['sync', 'schedule'])).toEqual(['projects', 'issuances', 'units', 'custody']);
    expect(knownKeysAt(['subscribers', 0])).toContain('secret_file');
    expect(knownKeysAt(['nope'])).toEqual([]);
  });
});

describe('a misspelled key in the file', () => {
  it('names the section it meant', () => {
    expect(problemsOf('[databse]\npath = "x.db"\n')).toEqual([
      'unknown key databse (did you mean database?)',
    ]);
  });

  it('names the key it meant, in a nested table and in an array of tables, one line per key', () => {
    expect(
      problemsOf(
        '[sync.schedule]\nproject = "off"\nunit = "off"\n[[subscribers]]\nurl = "http://127.0.0.1:1/x"\nsecret_fil = "/x"\n',
      ),
    ).toEqual(
      expect.arrayContaining([
        'unknown key sync.schedule.project (did you mean sync.schedule.projects?)',
        'unknown key sync.schedule.unit (did you mean sync.schedule.units?)',
        'unknown key subscribers[0].secret_fil (did you mean subscribers[0].secret_file?)',
      ]),
    );
  });

  it('guesses nothing for a key unlike any', () => {
    expect(problemsOf('[outbox]\ncolour = "blue"\n')).toEqual(['unknown key outbox.colour']);
  });
});

describe('VCU_SYNC_* variables', () => {
  it('warns about one it does not read, naming the closest known one, and never its value', () => {
    const warnings = unknownVariableWarnings({
      VCU_SYNC_DATABSE_URL: 'postgres://u:hunter2@h/db',
      VCU_SYNC_OPERATOR_URL: 'http://x',
      VCU_SYNC_FROBNICATE: '1',
      OTHER: '1',
    });
    expect(warnings).toEqual([
      'environment variable VCU_SYNC_DATABSE_URL is not one vcu-sync reads; it is ignored (did you mean VCU_SYNC_DATABASE_URL?)',
      'environment variable VCU_SYNC_FROBNICATE is not one vcu-sync reads; it is ignored',
    ]);
    expect(warnings.join('\n')).not.toContain('hunter2');
  });

  it('reads every variable README lists, and README lists every one it reads', () => {
    expect(unknownVariableWarnings(Object.fromEntries(KNOWN_VARIABLES.map((v) => [v, 'x'])))).toEqual([]);
    const readme = readFileSync(path.join(ROOT, 'README.md'), 'utf8');
    for (const variable of KNOWN_VARIABLES) {
      const base = variable.replace(/_FILE$/, '');
      expect(readme, `README does not name ${variable}`).toMatch(new RegExp(`\`${base}\\b`));
    }
  });

  it('VCU_SYNC_INSTANCE_NAME sets status.instance_name, over the file', () => {
    const file = path.join(dir, 'named.toml');
    writeFileSync(file, '[status]\ninstance_name = "from-file"\n');
    expect(loadConfig({ file, env: {} }).status.instance_name).toBe('from-file');
    expect(loadConfig({ file, env: { VCU_SYNC_INSTANCE_NAME: 'replica-2' } }).status.instance_name).toBe(
      'replica-2',
    );
  });

  it('the CLI prints the warning on stderr and carries on', () => {
    const { code, stdout, stderr } = runNode(cliArgs(['config', 'check']), {
      HOME: dir,
      VCU_SYNC_DB: path.join(dir, 'x.db'),
      VCU_SYNC_OPERATOR_URL: 'http://127.0.0.1:1',
      VCU_SYNC_API_KEY: 'k-typo-test',
      VCU_SYNC_WEBHOOK_SECRET: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
      VCU_SYNC_LOG_LEVL: 'debug',
    });
    expect(code, stderr).toBe(0);
    expect(stderr).toContain(
      'vcu-sync: warning: environment variable VCU_SYNC_LOG_LEVL is not one vcu-sync reads; it is ignored (did you mean VCU_SYNC_LOG_LEVEL?)',
    );
    expect(JSON.parse(stdout).log.level).toBe('info');
  });
});
