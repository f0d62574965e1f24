import { afterEach, describe, expect, it } from 'vitest';
import { runSync } from '../../src/mirror/syncRun.js';
import type { FaultKind, FaultOptions } from '../../src/simulator/index.js';
import { sqliteBackend } from '../../src/sqlite/mirror.js';
import { captureLog, count, expectMirrorEqualsRegistry, type Harness, harness } from './harness.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const ISSUANCES = '/integration/v1/issuances';

/** A harness whose log lines are kept, and a sleep that records its waits. */
async function setup(overrides: Record<string, unknown> = {}) {
  h = await harness({}, overrides);
  const lines = captureLog(h.ctx);
  const waits: number[] = [];
  const sleep = async (ms: number) => {
    waits.push(ms);
  };
  return { h, lines, waits, sleep };
}

const lastRun = (hh: Harness) =>
  hh.ctx.database.sqlite.prepare('SELECT * FROM sync_runs ORDER BY id DESC LIMIT 1').get() as Record<
    string,
    unknown
  >;

describe('faults during a sync', () => {
  const retried: [FaultKind, FaultOptions][] = [
    ['500', {}],
    ['502', {}],
    ['503', {}],
    ['429', { retryAfterSec: 2 }],
    ['reset', {}],
    ['truncated', { truncateMode: 'short-body' }],
    ['html', { htmlStatus: 502 }],
    ['latency', { latencyMs: 2_000 }],
  ];
  for (const [kind, opts] of retried) {
    it(`retries ${kind} inside the run and ends with the exact mirror`, async () => {
      const { h, lines, waits, sleep } = await setup({ 'operator.timeout_ms': 400 });
      h.sim.registry.change('issuances', [...h.sim.registry.snapshot('issuances').keys()][55]!, {
        issuanceAmount: 5,
      });
      h.sim.faults.next(2, kind, { ...opts, pathPrefix: ISSUANCES });
      const outcome = await runSync(h.ctx, 'issuances', {
        backend: sqliteBackend(h.ctx.database.sqlite),
        sleep,
      });
      expect(outcome.status, outcome.error ?? '').toBe('succeeded');
      expectMirrorEqualsRegistry(h, ['issuances']);
      expect(count(h.ctx, 'SELECT count(*) n FROM issuances')).toBe(60);
      const retries = lines.filter((l) => l.event === 'sync.page.retry');
      expect(retries).toHaveLength(2);
      if (kind === '429') expect(waits).toEqual([2000, 2000]);
      expect(waits).toHaveLength(2);
    });
  }

  it('gives up after sync.page_attempts and fails the run with the error, mirror intact', async () => {
    const { h, lines, sleep } = await setup();
    await runSync(h.ctx, 'issuances', { backend: sqliteBackend(h.ctx.database.sqlite), sleep });
    h.sim.faults.next(10, '503', { pathPrefix: ISSUANCES });
    const outcome = await runSync(h.ctx, 'issuances', {
      backend: sqliteBackend(h.ctx.database.sqlite),
      sleep,
    });
    expect(outcome.status).toBe('failed');
    expect(outcome.error).toMatch(/operator kept failing: operator answered 503/);
    expect(lastRun(h)).toMatchObject({ status: 'failed', error: outcome.error });
    expect(lines.some((l) => l.event === 'sync.run.finished' && l.status === 'failed')).toBe(true);
    expectMirrorEqualsRegistry(h, ['issuances']);
  });

  it('stops at once on 401 and marks the run failed with the auth error', async () => {
    const { h, lines, waits, sleep } = await setup();
    h.sim.faults.next(1, '401', { pathPrefix: ISSUANCES });
    const outcome = await runSync(h.ctx, 'issuances', {
      backend: sqliteBackend(h.ctx.database.sqlite),
      sleep,
    });
    expect(outcome.status).toBe('failed');
    expect(outcome.error).toMatch(/refused the API key.*401/);
    expect(waits).toHaveLength(0);
    expect(lastRun(h)).toMatchObject({ status: 'failed' });
    expect(lines.find((l) => l.event === 'sync.run.finished')).toMatchObject({ status: 'failed' });
    expect(JSON.stringify(lines)).not.toContain('sim-api-key');
  });

  for (const [kind, opts] of [
    ['truncated', { truncateMode: 'cut-json' }],
    ['html', { htmlStatus: 200 }],
  ] as [FaultKind, FaultOptions][]) {
    it(`fails cleanly on a page that is not JSON (${kind}), keeping the checkpoint to resume`, async () => {
      const { h, sleep } = await setup();
      // The first page passes, the second is broken.
      h.sim.faults.next(1, 'latency', { latencyMs: 1, pathPrefix: ISSUANCES });
      h.sim.faults.next(1, kind, { ...opts, pathPrefix: ISSUANCES });
      const outcome = await runSync(h.ctx, 'issuances', {
        backend: sqliteBackend(h.ctx.database.sqlite),
        sleep,
      });
      expect(outcome.status).toBe('failed');
      expect(outcome.error).toMatch(/unreadable/);
      expect(count(h.ctx, 'SELECT count(*) n FROM issuances')).toBe(50);
      const cp = h.ctx.database.sqlite
        .prepare('SELECT next_offset FROM sync_checkpoints WHERE resource = ?')
        .get('issuances');
      expect(cp).toEqual({ next_offset: 50 });
      h.sim.stats.reset();
      const resumed = await runSync(h.ctx, 'issuances', {
        backend: sqliteBackend(h.ctx.database.sqlite),
        sleep,
      });
      expect(resumed.status).toBe('succeeded');
      expect(lastRun(h).resumed_from).toBe(outcome.runId);
      // The page after the checkpoint, then the empty page that proves the end.
      expect(h.sim.stats.count(ISSUANCES)).toBe(2);
      expectMirrorEqualsRegistry(h, ['issuances']);
    });
  }

  it('quarantines an invalid record, goes on, and does not tombstone it', async () => {
    const { h, lines, sleep } = await setup();
    await runSync(h.ctx, 'issuances', { backend: sqliteBackend(h.ctx.database.sqlite), sleep });
    h.sim.faults.next(1, 'invalid-record', { pathPrefix: ISSUANCES });
    const outcome = await runSync(h.ctx, 'issuances', {
      backend: sqliteBackend(h.ctx.database.sqlite),
      sleep,
    });
    expect(outcome.status).toBe('succeeded');
    expect(outcome.counts).toMatchObject({ quarantined: 1, removed: 0 });
    const q = h.ctx.database.sqlite
      .prepare('SELECT record_id, reason, raw, run_id FROM quarantine')
      .all() as Record<string, unknown>[];
    expect(q).toHaveLength(1);
    expect(q[0]).toMatchObject({ run_id: outcome.runId });
    expect(String(q[0]!.reason)).toMatch(/issuanceAmount/);
    expect(JSON.parse(String(q[0]!.raw)).issuanceAmount).toBe('lots');
    expect(lastRun(h)).toMatchObject({ quarantined: 1 });
    expect(lines.some((l) => l.event === 'sync.record.quarantined')).toBe(true);
    expectMirrorEqualsRegistry(h, ['issuances']);
  });
});
