import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { configSchema } from '../../src/config/configSchema.js';
import { PROBLEM_CODES } from '../../src/health/rules.js';
import { ROOT } from '../helpers/cli.js';
import { brokenLink, codeSpans, documentation, relativeLinks } from './markdown.js';
import {
  closeScenarios,
  EXIT_SCENARIOS,
  GENERAL_EXIT_SCENARIOS,
  scenarioExit,
} from './readmeExitScenarios.js';

/**
 * README and docs/ say what the program does: every log event, config key, problem code and exit
 * code they name must exist, and every link between them must lead somewhere. When this fails after
 * a merge, the message names the missing thing and where it is written: add it to the code, or
 * correct the page.
 */

const README = readFileSync(path.join(ROOT, 'README.md'), 'utf8');
/** README.md and every docs/*.md. */
const DOCS = documentation();
/** Every code span of README and docs/, with its file and line. */
const SPANS = DOCS.flatMap(codeSpans);

/** README is the user's guide; what is longer goes to docs/ (issue 26). */
const README_MAX_LINES = 400;

/** Dotted lower-case names, the shape of both config keys (`sync.page_size`) and events (`sync.run.finished`). */
const DOTTED = /^[a-z][a-z_]*(?:\.[a-z_]+)+$/;

/** Every key of the configuration, dotted as TOML spells it, sections and nested tables included. */
function configKeys(): Set<string> {
  const keys = new Set<string>();
  const walk = (schema: z.core.$ZodType, prefix: string) => {
    let s = schema;
    while (s._zod.def.type === 'default' || s._zod.def.type === 'optional')
      s = (s._zod.def as unknown as { innerType: z.core.$ZodType }).innerType;
    if (s._zod.def.type !== 'object') return;
    const shape = (s._zod.def as unknown as { shape: Record<string, z.core.$ZodType> }).shape;
    for (const [name, child] of Object.entries(shape)) {
      const key = prefix ? `${prefix}.${name}` : name;
      keys.add(key);
      walk(child, key);
    }
  };
  walk(configSchema, '');
  return keys;
}

/** The text of every TypeScript file under src/. */
function sources(dir = path.join(ROOT, 'src')): Array<{ file: string; text: string }> {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return sources(full);
    return entry.name.endsWith('.ts')
      ? [{ file: path.relative(ROOT, full), text: readFileSync(full, 'utf8') }]
      : [];
  });
}

/** Every quoted dotted name in src/ ('sync.run.finished'): where event names are written. */
function dottedLiterals(): Set<string> {
  const out = new Set<string>();
  for (const { text } of sources()) {
    for (const m of text.matchAll(/(['"`])([a-z][a-z_]*(?:\.[a-z_]+)+)\1/g)) out.add(m[2]!);
  }
  return out;
}

/** The README section under a `## ` heading starting with `title`, up to the next `## `. */
function section(title: string): string {
  const start = README.indexOf(`\n## ${title}`);
  if (start < 0) throw new Error(`README has no "## ${title}" section`);
  const end = README.indexOf('\n## ', start + 1);
  return README.slice(start, end < 0 ? undefined : end);
}

describe('README and docs/ name only what exists', () => {
  it('every dotted name in a code span is a config key or an event the code logs', () => {
    const keys = configKeys();
    const literals = dottedLiterals();
    const wrong: string[] = [];
    for (const { where, span } of SPANS) {
      // `operator.auth = "bearer"`: the key before " = " must exist.
      const assigned = /^([a-z][a-z_]*(?:\.[a-z_]+)+) = /.exec(span)?.[1];
      if (assigned) {
        if (!keys.has(assigned)) wrong.push(`${where}: \`${assigned}\` is not a config key`);
        continue;
      }
      if (!DOTTED.test(span) || keys.has(span)) continue;
      if (!literals.has(span)) {
        wrong.push(
          `${where}: \`${span}\` is neither a config key nor an event logged in src/ (no string literal '${span}')`,
        );
      }
    }
    expect(wrong, wrong.join('\n')).toEqual([]);
  });

  it('every [section] in a code span is a config table', () => {
    const keys = configKeys();
    const wrong = SPANS.map(({ where, span }) => ({ where, table: /^\[\[?([a-z_.]+)\]\]?$/.exec(span)?.[1] }))
      .filter(({ table }) => table !== undefined && !keys.has(table))
      .map(({ where, table }) => `${where}: [${table}] is not a config table`);
    expect(wrong, wrong.join('\n')).toEqual([]);
  });

  it('the runbook has an entry for every status problem code, and only for those', () => {
    // The catalog every raised problem is typed against (src/health/rules.ts).
    const codes = new Set<string>(PROBLEM_CODES);
    expect(codes.size).toBeGreaterThan(5);
    const runbook = section('Runbook');
    const documented = new Set<string>();
    // A table row whose first cell is the code, or a heading that is the code.
    for (const m of runbook.matchAll(/^\|\s*`([a-z0-9-]+)`\s*\|/gm)) documented.add(m[1]!);
    for (const m of runbook.matchAll(/^#{3,4}\s+`?([a-z0-9-]+)`?\s*$/gm)) documented.add(m[1]!);
    const undocumented = [...codes].filter((c) => !documented.has(c));
    const unknown = [...documented].filter((c) => !codes.has(c));
    expect(undocumented, `problem codes without a runbook entry: ${undocumented.join(', ')}`).toEqual([]);
    expect(unknown, `runbook entries for codes the code never raises: ${unknown.join(', ')}`).toEqual([]);
  });

  it('the pages checked are README and every page of docs/', () => {
    const files = DOCS.map((doc) => doc.file);
    expect(files[0]).toBe('README.md');
    expect(files).toEqual(expect.arrayContaining(['docs/postgresql.md', 'docs/benchmarks.md']));
    // A code span on a docs/ page is read like one in README.
    expect(SPANS.some(({ where }) => where.startsWith('docs/'))).toBe(true);
  });
});

describe('README is the user guide, and its links and those of docs/ lead somewhere', () => {
  it(`README stays under ${README_MAX_LINES} lines (the rest belongs in docs/)`, () => {
    const lines = README.split('\n').length - (README.endsWith('\n') ? 1 : 0);
    expect(lines, `README.md has ${lines} lines: move detail to a page of docs/`).toBeLessThan(
      README_MAX_LINES,
    );
  });

  it('every relative link points to a file that exists, and to a heading there', () => {
    const links = DOCS.flatMap(relativeLinks);
    // README links to each page of docs/.
    const fromReadme = new Set(
      links.filter((l) => l.where.startsWith('README.md:')).map((l) => l.target.split('#')[0]),
    );
    const unlinked = DOCS.slice(1)
      .filter((doc) => !fromReadme.has(doc.file))
      .map((doc) => doc.file);
    expect(unlinked, `pages of docs/ README does not link to: ${unlinked.join(', ')}`).toEqual([]);
    const broken = links.flatMap(({ where, target }) => {
      const problem = brokenLink(where.split(':')[0]!, target);
      return problem ? [`${where}: ${problem}`] : [];
    });
    expect(broken, broken.join('\n')).toEqual([]);
  });

  it('finds the broken links it is there to find', () => {
    expect(brokenLink('README.md', 'docs/no-such-page.md')).toMatch(/no file docs\/no-such-page\.md/);
    expect(brokenLink('README.md', 'docs/postgresql.md#no-such-heading')).toMatch(/no heading/);
    expect(brokenLink('docs/api.md', '../README.md#reading-the-mirror')).toBeNull();
    expect(brokenLink('docs/api.md', '#with-sql')).toBeNull();
    expect(brokenLink('docs/api.md', '#a-typed-client-from-openapijson')).toBeNull();
    expect(brokenLink('README.md', '#runbook-what-vcu-sync-status-problems-mean')).toBeNull();
    expect(brokenLink('README.md', '../outside.md')).toMatch(/leaves the repository/);
  });
});

/** The command table of "## Command line": command (e.g. "db backup") → the exit codes it documents. */
function documentedExits(): Map<string, number[]> {
  const out = new Map<string, number[]>();
  for (const m of section('Command line').matchAll(/^\| `vcu-sync ([^`]+)` \|.*\| ([^|]*) \|$/gm)) {
    // The command's own words: `db backup FILE` → "db backup", `outbox list\|show REF` → "outbox".
    const words: string[] = [];
    for (const word of m[1]!.split(' ')) {
      if (!/^[a-z]+$/.test(word)) break;
      words.push(word);
    }
    const command = words.join(' ');
    out.set(
      command,
      [...m[2]!.matchAll(/\b\d+\b/g)].map((d) => Number(d[0])),
    );
  }
  return out;
}

/** The codes of the "Exit codes for errors:" sentence. */
function generalExits(): number[] {
  const sentence = /Exit codes for errors:([^.]*)/.exec(section('Command line').replace(/\n/g, ' '))?.[1];
  if (!sentence) throw new Error('README has no "Exit codes for errors:" sentence');
  // Codes only: not the digits of a code span such as `VCU_SYNC_DEBUG=1`.
  const codes = [...sentence.replace(/`[^`]*`/g, '').matchAll(/\b\d+\b/g)].map((d) => Number(d[0]));
  return [...new Set(codes)];
}

describe('README exit codes are what the commands return', () => {
  const exits = documentedExits();
  afterAll(closeScenarios);

  it('the command table documents every command and has a way here to produce each exit code', () => {
    expect([...exits.keys()].sort()).toEqual(
      [
        'completion bash',
        'config check',
        'db backup',
        'db migrate',
        'deliveries',
        'demo',
        'enqueue',
        'outbox',
        'reconcile',
        'run',
        'schema',
        'simulator',
        'status',
        'sync',
      ].sort(),
    );
    const missing = [...exits].flatMap(([command, codes]) =>
      codes
        .filter((code) => !EXIT_SCENARIOS[command]?.[code])
        .map(
          (code) =>
            `README documents exit ${code} for "vcu-sync ${command}": add a scenario that produces it`,
        ),
    );
    const general = generalExits()
      .filter((code) => !GENERAL_EXIT_SCENARIOS[code])
      .map((code) => `README's "Exit codes for errors" lists ${code}: add a scenario that produces it`);
    expect([...missing, ...general], [...missing, ...general].join('\n')).toEqual([]);
  });

  const cases = [...exits].flatMap(([command, codes]) =>
    codes.filter((code) => EXIT_SCENARIOS[command]?.[code]).map((code) => [command, code] as const),
  );
  it.each(cases)('vcu-sync %s exits %i as README says', async (command, code) => {
    const scenario = EXIT_SCENARIOS[command]![code]!;
    const result = await scenarioExit(scenario);
    expect(result.code, `${scenario.what}\n${result.output.slice(-2000)}`).toBe(code);
  });

  it.each(generalExits().filter((code) => GENERAL_EXIT_SCENARIOS[code]))(
    'exit %i means what "Exit codes for errors" says',
    async (code) => {
      const scenario = GENERAL_EXIT_SCENARIOS[code]!;
      const result = await scenarioExit(scenario);
      expect(result.code, `${scenario.what}\n${result.output.slice(-2000)}`).toBe(code);
    },
  );
});
