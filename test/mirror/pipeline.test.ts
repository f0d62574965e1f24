import { afterEach, describe, expect, it } from 'vitest';
import type { Clock } from '../../src/common/clock.js';
import { runSync } from '../../src/mirror/syncRun.js';
import type { OperatorClient } from '../../src/operator/client.js';
import { sqliteBackend } from '../../src/sqlite/mirror.js';
import { count, expectMirrorEqualsRegistry, type Harness, harness, noSleep } from './harness.js';

/**
 * The pipelined scan: the next page's request leaves once a page is read, before that page
 * commits, and never further ahead. Observed where the requests leave (the real operator client,
 * wrapped to note each call) against what the database has committed at that moment.
 */

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const UNITS = '/integration/v1/units';
const PAGE = 50;

/**
 * A clock whose every reading is a second after the last: to the held writes, every page arrives
 * a second after the commit before (a slow operator), so each page commits on its own.
 */
function slowOperatorClock(): Clock {
  let t = Date.parse('2026-01-01T00:00:00Z');
  return { now: () => (t += 1_000) };
}

/** One units request as it left: its offset, and the units checkpoint committed at that moment. */
interface Sent {
  offset: number;
  committed: number | null;
}

/** Notes every units request the client sends; `before` runs first (to inject a fault). */
function watchRequests(hh: Harness, before: (sent: Sent, index: number) => void = () => {}) {
  const client: OperatorClient = hh.ctx.operator();
  const list = client.list.bind(client);
  const checkpoint = hh.ctx.database.sqlite.prepare<[], { next_offset: number }>(
    "SELECT next_offset FROM sync_checkpoints WHERE resource = 'units'",
  );
  const sent: Sent[] = [];
  let open = 0;
  let mostOpen = 0;
  client.list = async (operation, path, query = {}, request = {}) => {
    if (path !== UNITS) return list(operation, path, query, request);
    const note = { offset: Number(query.offset ?? 0), committed: checkpoint.get()?.next_offset ?? null };
    sent.push(note);
    before(note, sent.length - 1);
    open++;
    mostOpen = Math.max(mostOpen, open);
    try {
      return await list(operation, path, query, request);
    } finally {
      open--;
    }
  };
  return { sent, mostOpen: () => mostOpen };
}

describe('pipelined scan', () => {
  it('sends the next page while a page commits, never more than one page ahead, and mirrors exactly', async () => {
    h = await harness({ units: 400 }, { 'sync.page_size': PAGE });
    h.ctx.clock = slowOperatorClock();
    const watch = watchRequests(h);
    const outcome = await runSync(h.ctx, 'units', {
      backend: sqliteBackend(h.ctx.database.sqlite),
      full: true,
      sleep: noSleep,
    });
    expect(outcome.status, outcome.error ?? '').toBe('succeeded');
    expectMirrorEqualsRegistry(h, ['unit_operations']);

    // Page k (k >= 1) is asked for from the last record of page k-1 (its anchor), once page k-1
    // is read and before it commits: the checkpoint then stands at the end of page k-2. One page
    // ahead, never two.
    const end = (k: number) => Math.min(watch.sent[k]!.offset + PAGE, 400);
    expect(watch.sent.length).toBeGreaterThanOrEqual(400 / PAGE + 1);
    expect(watch.sent[0]).toEqual({ offset: 0, committed: null });
    for (let k = 1; k < watch.sent.length; k++) {
      expect(watch.sent[k], `page ${k}`).toEqual({
        offset: end(k - 1) - 1,
        committed: k === 1 ? null : end(k - 2),
      });
    }
    // One request open at a time: a page's body is read before the next request leaves.
    expect(watch.mostOpen()).toBe(1);
  });

  it('a failure of page N+1 while page N commits leaves the checkpoint at N, and the next run resumes exactly', async () => {
    h = await harness({ units: 400 }, { 'sync.page_size': PAGE, 'sync.page_attempts': 3 });
    h.ctx.clock = slowOperatorClock();
    const hh = h;
    const failing = 4; // page index N+1: offsets 200..249
    const watch = watchRequests(hh, (_sent, index) => {
      // Every attempt at page N+1 fails: the run gives up on it.
      if (index === failing) hh.sim.faults.next(3, '503', { pathPrefix: UNITS });
    });
    const failed = await runSync(hh.ctx, 'units', {
      backend: sqliteBackend(hh.ctx.database.sqlite),
      full: true,
      sleep: noSleep,
    });
    expect(failed.status).toBe('failed');
    expect(failed.error).toMatch(/503/);
    // Page N+1 was asked for before page N committed (the checkpoint stood at the end of N-1)...
    const pageN = watch.sent[failing - 1]!;
    const endOfN = pageN.offset + PAGE;
    expect(watch.sent[failing]).toEqual({
      offset: endOfN - 1,
      committed: watch.sent[failing - 2]!.offset + PAGE,
    });
    // ...and page N committed all the same, with its checkpoint; nothing of page N+1 did.
    const cp = hh.ctx.database.sqlite
      .prepare("SELECT next_offset, run_id FROM sync_checkpoints WHERE resource = 'units'")
      .get();
    expect(cp).toEqual({ next_offset: endOfN, run_id: failed.runId });
    expect(count(hh.ctx, 'SELECT count(*) n FROM unit_operations')).toBe(endOfN);
    expect(count(hh.ctx, 'SELECT max(_position) n FROM unit_operations')).toBe(endOfN - 1);

    // The operator moves on meanwhile; the next run resumes at the checkpoint and ends exact.
    hh.sim.registry.appendUnits(30);
    const firstResumed = watch.sent.length;
    const resumed = await runSync(hh.ctx, 'units', {
      backend: sqliteBackend(hh.ctx.database.sqlite),
      full: true,
      sleep: noSleep,
    });
    expect(resumed.status, resumed.error ?? '').toBe('succeeded');
    expect(watch.sent[firstResumed]).toEqual({ offset: endOfN - 1, committed: endOfN });
    const run = hh.ctx.database.sqlite
      .prepare('SELECT resumed_from, status FROM sync_runs WHERE id = ?')
      .get(resumed.runId);
    expect(run).toEqual({ resumed_from: failed.runId, status: 'succeeded' });
    expectMirrorEqualsRegistry(hh, ['unit_operations']);
    expect(count(hh.ctx, 'SELECT count(*) n FROM unit_operations')).toBe(430);
    // Each record written once in all: those of pages 0..N by the failed run, the rest by this one.
    expect(failed.counts.inserted).toBe(endOfN);
    expect(resumed.counts.inserted).toBe(430 - endOfN);
  });
});
