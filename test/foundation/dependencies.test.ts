import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/cli.js';
import { tempDir } from '../helpers/context.js';

/**
 * The import rules (.dependency-cruiser.cjs, `npm run depcheck`) can fail: run on a fixture src/
 * with deliberate violations, dependency-cruiser reports each; run on the real src/, none.
 */

const CONFIG = path.join(ROOT, '.dependency-cruiser.cjs');
const DEPCRUISE = path.join(ROOT, 'node_modules/dependency-cruiser/bin/dependency-cruiser.mjs');

interface Violation {
  rule: { name: string };
  from: string;
  to: string;
}

/** Runs dependency-cruiser on `src` under `cwd` with the project's config, as `npm run depcheck` does. */
function depcruise(cwd: string, outputType: 'json' | 'err') {
  return spawnSync(process.execPath, [DEPCRUISE, 'src', '--config', CONFIG, '--output-type', outputType], {
    cwd,
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  });
}

/** dependency-cruiser's violations for `src` under `cwd`. */
function cruise(cwd: string): Violation[] {
  const run = depcruise(cwd, 'json');
  expect(run.stdout, run.stderr).not.toBe('');
  return (JSON.parse(run.stdout) as { summary: { violations: Violation[] } }).summary.violations;
}

/** `rule: from -> to`, one line per violation, sorted: what the assertions compare. */
const lines = (violations: readonly Violation[]) =>
  violations.map((v) => `${v.rule.name}: ${v.from} -> ${v.to}`).sort();

/** The fixture's files: each path and the modules it imports (relative, as src/ writes them). */
const FIXTURE: Record<string, string[]> = {
  // Effects flowing up: a store importing the subscribers, and the feed.
  'src/operations/store.ts': ['../subscribers/deliverySinks.js', './states.js'],
  'src/operations/states.ts': [],
  'src/subscribers/deliverySinks.ts': ['../operations/states.js'],
  'src/subscribers/send.ts': [],
  'src/db/changes.ts': ['../feed/feedReads.js'],
  'src/feed/feedReads.ts': [],
  // A cycle between two folders (no module imports itself: only the folders meet twice).
  'src/outbox/settle.ts': ['../inbox/correlate.js'],
  'src/inbox/correlate.ts': [],
  'src/inbox/reread.ts': ['../outbox/timestamp.js'],
  'src/outbox/timestamp.ts': [],
  // A common helper reaching into a folder; the configuration reaching above itself.
  'src/common/clock.ts': ['../db/changes.js'],
  'src/config/config.ts': ['../outbox/timestamp.js', '../common/clock.js'],
  // What the roots may do: the daemon wires the subscribers and the feed in.
  'src/app/daemon.ts': ['../subscribers/send.js', '../feed/feedReads.js'],
  // A domain naming a database: an adapter's module, a driver. The adapter and the factory may.
  'src/outbox/pause.ts': ['../sqlite/open.js', 'pg'],
  'src/sqlite/open.ts': ['pg'],
  'src/app/sqliteStores.ts': ['../sqlite/open.js'],
};

describe('the import rules', () => {
  let fixture: { dir: string; cleanup: () => void };

  beforeAll(() => {
    fixture = tempDir('vcu-sync-deps-');
    for (const [file, imports] of Object.entries(FIXTURE)) {
      const full = path.join(fixture.dir, file);
      mkdirSync(path.dirname(full), { recursive: true });
      const body = imports.map((spec, i) => `import * as m${i} from '${spec}';\nvoid m${i};`).join('\n');
      writeFileSync(full, `${body}\nexport const here = '${file}';\n`);
    }
    // A driver to import, as npm installs it.
    mkdirSync(path.join(fixture.dir, 'node_modules/pg'), { recursive: true });
    writeFileSync(path.join(fixture.dir, 'node_modules/pg/package.json'), '{"name":"pg","main":"index.js"}');
    writeFileSync(path.join(fixture.dir, 'node_modules/pg/index.js'), 'module.exports = {};\n');
    // The project's module resolution: `./x.js` names `x.ts`.
    writeFileSync(
      path.join(fixture.dir, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: { module: 'NodeNext', moduleResolution: 'NodeNext' },
        include: ['src'],
      }),
    );
  });

  afterAll(() => fixture?.cleanup());

  it('report an upward import, a folder cycle (the one it closes too), a foundation reaching up and a database named outside its homes', () => {
    expect(lines(cruise(fixture.dir))).toEqual(
      [
        'effects-flow-down-subscribers: src/operations/store.ts -> src/subscribers/deliverySinks.ts',
        'effects-flow-down-feed: src/db/changes.ts -> src/feed/feedReads.ts',
        'no-folder-cycle: src/inbox -> src/outbox',
        'no-folder-cycle: src/outbox -> src/inbox',
        // The store's import upward closes a cycle with the subscribers, which build on operations/.
        'no-folder-cycle: src/operations -> src/subscribers',
        'no-folder-cycle: src/subscribers -> src/operations',
        'foundations-are-leaves: src/common/clock.ts -> src/db/changes.ts',
        'config-http-process-need-only-common: src/config/config.ts -> src/outbox/timestamp.ts',
        'database-named-in-its-homes: src/outbox/pause.ts -> src/sqlite/open.ts',
        'database-named-in-its-homes: src/outbox/pause.ts -> node_modules/pg/index.js',
      ].sort(),
    );
  });

  it('fail the command CI runs on a violation (its exit status; `npm run depcheck` reports as `err`)', () => {
    const run = depcruise(fixture.dir, 'err');
    expect(run.stdout).toContain('effects-flow-down-subscribers: src/operations/store.ts');
    expect(run.status).not.toBe(0);
  });

  it('pass on the real src/ (what `npm run depcheck` checks in CI)', () => {
    expect(lines(cruise(ROOT))).toEqual([]);
  });
});
