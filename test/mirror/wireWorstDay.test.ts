import { afterEach, describe, expect, it } from 'vitest';
import { runSync } from '../../src/mirror/syncRun.js';
import { generateProject } from '../../src/simulator/generate.js';
import type { Project } from '../../src/simulator/types.js';
import { sqliteBackend } from '../../src/sqlite/mirror.js';
import { testContext } from '../helpers/context.js';
import { type HostileServer, startHostileServer } from '../operator/hostileServer.js';
import { liveRows, noSleep } from './harness.js';

/**
 * The re-sync's fast path (an unchanged record decided on the hash of its bytes as sent,
 * batchPlan.ts fillContent) against an operator on a bad day: a silent cap on `limit`, bodies
 * respelled between scans (indented, non-ASCII escaped), a record changed under its id, an id that
 * vanishes and comes back with other content. After every scan the mirror equals what was served,
 * and each row's `_raw` is the record serialized, never the operator's spelling.
 */
const CAP = 5;
const PATH = '/integration/v1/projects';

type Spelling = 'compact' | 'indented' | 'escaped';

/** The page asked for, cut at the silent cap, spelled the day's way. */
function body(records: readonly Project[], url: string, spelling: Spelling): string {
  const q = new URL(url, 'http://x').searchParams;
  const offset = Number(q.get('offset') ?? 0);
  const limit = Math.min(Number(q.get('limit') ?? CAP), CAP);
  const page = records.slice(offset, offset + limit);
  if (spelling === 'indented') return JSON.stringify(page, null, 2);
  const text = JSON.stringify(page);
  // Every non-ASCII character as a \u escape: the same JSON value, other bytes.
  return spelling === 'escaped'
    ? text.replace(/[\u0080-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)
    : text;
}

let server: HostileServer | undefined;
let ctx: ReturnType<typeof testContext> | undefined;
afterEach(async () => {
  ctx?.dispose();
  await server?.close();
  ctx = undefined;
  server = undefined;
});

describe('the re-sync on the operator’s bad day', () => {
  it('keeps the mirror equal to what is served, whatever its spelling, through changes, removals and a reused id', async () => {
    server = await startHostileServer();
    const gen = { seed: 7, projects: 13, issuances: 0, units: 0 };
    let served: Project[] = Array.from({ length: 13 }, (_, i) => ({
      ...generateProject(gen, i),
      // Non-ASCII text, so an escaped spelling differs from the compact one byte for byte.
      projectName: `Café Forêt ${i}`,
    }));
    let spelling: Spelling = 'compact';
    server.on(PATH, (req, res) => {
      const text = body(served, req.url ?? PATH, spelling);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(text);
    });
    ctx = testContext({
      overrides: {
        'operator.url': server.url,
        'operator.api_key': 'hostile-key',
        'operator.rate_per_second': 100_000,
        'sync.page_size': 50,
        'sync.max_remove_share': 1,
      },
    });
    const c = ctx;
    const scan = async () => {
      const outcome = await runSync(c, 'projects', {
        backend: sqliteBackend(c.database.sqlite),
        sleep: noSleep,
        full: true,
      });
      expect(outcome.status, outcome.error ?? '').toBe('succeeded');
      // The mirror is what was served: the same ids, each row the record serialized.
      const rows = liveRows(c, 'projects');
      expect([...rows.keys()].sort()).toEqual(served.map((p) => String(p.projectID)).sort());
      for (const p of served) expect(rows.get(String(p.projectID))?._raw).toBe(JSON.stringify(p));
      return outcome.counts;
    };

    expect(await scan()).toMatchObject({ inserted: 13, updated: 0, removed: 0 });
    // Nothing changed, spelled two other ways: nothing written.
    for (spelling of ['indented', 'escaped'] as const)
      expect(await scan()).toMatchObject({ inserted: 0, updated: 0, removed: 0, unchanged: 13 });

    // One record changed under its id, one gone, the rest respelled.
    const gone = served[7]!;
    served = served.filter((p) => p !== gone).map((p, i) => (i === 3 ? { ...p, projectName: 'Renamed' } : p));
    spelling = 'indented';
    expect(await scan()).toMatchObject({ inserted: 0, updated: 1, removed: 1, unchanged: 11 });

    // The vanished id comes back holding another record, the page compact again.
    served = [
      ...served,
      { ...gone, projectName: 'Another project under an old id', projectStatus: 'Listed' },
    ];
    spelling = 'compact';
    expect(await scan()).toMatchObject({ inserted: 1, updated: 0, removed: 0, unchanged: 12 });
  });
});
