import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { buildProgram, SYNC_RESOURCE_NAMES } from '../../src/cli.js';
import { completionTree } from '../../src/commands/completion.js';
import { SYNC_TARGETS } from '../../src/common/syncRequests.js';
import { cliArgs, ROOT, runNode } from '../helpers/cli.js';
import { tempDir } from '../helpers/context.js';

/**
 * `vcu-sync completion bash`, printed by the real CLI, sourced in a real bash, and its function
 * called as bash's programmable completion calls it (COMP_WORDS, COMP_CWORD), for the words a user
 * types; and `--version`.
 */

const { dir, cleanup } = tempDir('vcu-sync-completion-');
afterAll(cleanup);

const printed = runNode(cliArgs(['completion', 'bash']), { HOME: dir }, dir);
const script = path.join(dir, 'vcu-sync.bash');
writeFileSync(script, printed.stdout);

/** What bash offers after the words typed so far (the last one is the word being completed). */
function complete(...words: string[]): string[] {
  const quoted = words.map((w) => `'${w}'`).join(' ');
  const result = spawnSync(
    'bash',
    [
      '--norc',
      '-c',
      `source "$1" && COMP_WORDS=(${quoted}) && COMP_CWORD=${words.length - 1} && _vcu_sync && printf '%s\\n' "\${COMPREPLY[@]}"`,
      'bash',
      script,
    ],
    { encoding: 'utf8' },
  );
  expect(result.stderr).toBe('');
  expect(result.status).toBe(0);
  return result.stdout.split('\n').filter(Boolean);
}

describe('vcu-sync completion bash', () => {
  it('prints a script that registers the completion, exit 0', () => {
    expect(printed.code, printed.stderr).toBe(0);
    expect(printed.stdout).toContain('complete -o default -F _vcu_sync vcu-sync');
    const registered = spawnSync(
      'bash',
      ['--norc', '-c', 'source "$1" && complete -p vcu-sync', 'bash', script],
      {
        encoding: 'utf8',
      },
    );
    expect(registered.stdout.trim()).toBe('complete -o default -F _vcu_sync vcu-sync');
  });

  it('completes a command from its first letters', () => {
    expect(complete('vcu-sync', 'ou')).toEqual(['outbox']);
    expect(complete('vcu-sync', 'd')).toEqual(['deliveries', 'demo', 'db']);
  });

  it("offers a command's actions and subcommands, after global options too", () => {
    expect(complete('vcu-sync', 'outbox', '')).toEqual(['list', 'show', 'retry', 'cancel']);
    expect(complete('vcu-sync', '--config', 'x.toml', 'outbox', 're')).toEqual(['retry']);
    expect(complete('vcu-sync', 'db', '')).toEqual(['migrate', 'backup', 'help']);
    expect(complete('vcu-sync', 'sync', 'units', 'pro')).toEqual(['projects']);
    expect(complete('vcu-sync', 'schema', 'custody_')).toEqual([
      'custody_projects',
      'custody_issuances',
      'custody_units',
    ]);
  });

  it("offers a command's options after a dash, and nothing in place of an option's value", () => {
    expect(complete('vcu-sync', 'outbox', 'list', '--')).toEqual([
      '--json',
      '--state',
      '--cursor',
      '--help',
      '--config',
    ]);
    expect(complete('vcu-sync', 'outbox', '--state', '')).toEqual([]);
    expect(complete('vcu-sync', '-')).toContain('--version');
  });

  it('is built from the command tree, so every command is in it', () => {
    const program = buildProgram();
    const tree = completionTree(program);
    for (const command of program.commands) {
      expect(tree.has(`vcu-sync ${command.name()}`), command.name()).toBe(true);
      for (const sub of command.commands)
        expect(tree.has(`vcu-sync ${command.name()} ${sub.name()}`)).toBe(true);
    }
    expect([...SYNC_RESOURCE_NAMES]).toEqual([...SYNC_TARGETS]);
  });

  it('refuses a shell it has no script for with a usage error, exit 64', () => {
    const { code, stderr } = runNode(cliArgs(['completion', 'fish']), { HOME: dir }, dir);
    expect(code).toBe(64);
    expect(stderr).toContain('Allowed choices are bash');
  });
});

describe('vcu-sync --version', () => {
  it("prints package.json's version, exit 0", () => {
    const { version } = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as {
      version: string;
    };
    for (const flag of ['--version', '-V']) {
      const { code, stdout } = runNode(cliArgs([flag]), { HOME: dir }, dir);
      expect(code).toBe(0);
      expect(stdout.trim()).toBe(version);
    }
  });
});
