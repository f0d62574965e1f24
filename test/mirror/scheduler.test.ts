import { afterEach, describe, expect, it } from 'vitest';
import { runSyncCommand } from '../../src/commands/sync.js';
import { SyncRequests } from '../../src/common/syncRequests.js';
import { SyncCoordinator } from '../../src/mirror/coordinator.js';
import { createMirrorComponent, jitterMs } from '../../src/mirror/scheduler.js';
import { isDeadRun, markInterruptedRuns, sqliteBackend } from '../../src/sqlite/mirror.js';
import { count, type Harness, harness, noSleep } from './harness.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

describe('scheduling and runs', () => {
  it('coalesces requests made while a run is in progress into one follow-up run', async () => {
    h = await harness();
    const coordinator = new SyncCoordinator(h.ctx, () => sqliteBackend(h!.ctx.database.sqlite), {
      sleep: noSleep,
    });
    const first = coordinator.request('projects', 'manual');
    const joined = [coordinator.request('projects', 'api'), coordinator.request('projects', 'webhook')];
    const outcomes = await Promise.all([first, ...joined]);
    expect(outcomes[1]!.runId).toBe(outcomes[2]!.runId);
    expect(outcomes[1]!.runId).not.toBe(outcomes[0]!.runId);
    expect(count(h.ctx, 'SELECT count(*) n FROM sync_runs')).toBe(2);
    await coordinator.stop();
  });

  it('the component syncs everything at start-up and answers requestSync', async () => {
    h = await harness(
      {},
      { 'sync.schedule': { projects: 'off', issuances: 'off', units: 'off', custody: 'off' } },
    );
    const syncs = new SyncRequests();
    expect(await syncs.request(['custody'], 'webhook')).toBe(false);
    const component = createMirrorComponent(h.ctx, {
      sleep: noSleep,
      syncRequests: syncs,
      runner: new SyncCoordinator(h.ctx, (stop) => sqliteBackend(h!.ctx.database.sqlite, stop), {
        sleep: noSleep,
      }),
    });
    await component.start();
    const done = () => count(h!.ctx, "SELECT count(*) n FROM sync_runs WHERE status = 'succeeded'");
    for (let i = 0; i < 2000 && done() < 4; i++) await new Promise((r) => setTimeout(r, 10));
    expect(done()).toBe(4);
    expect(await syncs.request(['custody'], 'webhook')).toBe(true);
    for (let i = 0; i < 2000 && done() < 5; i++) await new Promise((r) => setTimeout(r, 10));
    expect(
      h.ctx.database.sqlite
        .prepare("SELECT trigger FROM sync_runs WHERE resource = 'custody' ORDER BY id")
        .all(),
    ).toEqual([{ trigger: 'startup' }, { trigger: 'webhook' }]);
    await component.stop();
    // Stopped, it serves no more requests.
    expect(await syncs.request(['custody'], 'webhook')).toBe(false);
  });

  it('marks runs whose process died as interrupted', async () => {
    h = await harness();
    const insert = h.ctx.database.sqlite.prepare(
      "INSERT INTO sync_runs (resource, mode, trigger, started_at, status, pid) VALUES ('units', 'full', 'manual', '2026-01-01T00:00:00.000Z', 'running', ?)",
    );
    insert.run(2 ** 22 + 12345); // no such process
    insert.run(process.pid); // our pid, but no run of ours behind it (a reused pid)
    const { interrupted } = markInterruptedRuns(h.ctx, h.ctx.database.sqlite);
    expect(interrupted).toHaveLength(2);
    expect(count(h.ctx, "SELECT count(*) n FROM sync_runs WHERE status = 'interrupted'")).toBe(2);
    expect(isDeadRun(10, true, 11, false)).toBe(false);
    expect(isDeadRun(null, false, 11, false)).toBe(true);
    expect(jitterMs(30, 0.5)).toBe(15_000);
  });

  it('sync command: exit 0 when all succeed, 1 otherwise, one summary line per resource', async () => {
    h = await harness();
    const lines: string[] = [];
    const out = { write: (s: string) => lines.push(s) } as unknown as NodeJS.WritableStream;
    expect(
      await runSyncCommand(h.ctx, {
        backend: sqliteBackend(h.ctx.database.sqlite),
        targets: ['projects', 'units'],
        tty: false,
        out,
        sleep: noSleep,
      }),
    ).toBe(0);
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/^projects: succeeded \(full\) 20 fetched, 20 inserted/);
    h.sim.faults.next(1, '401');
    expect(
      await runSyncCommand(h.ctx, {
        backend: sqliteBackend(h.ctx.database.sqlite),
        targets: ['issuances'],
        tty: false,
        out,
        sleep: noSleep,
      }),
    ).toBe(1);
    expect(lines[2]).toMatch(/^issuances: failed .*refused the API key/);
    await expect(
      runSyncCommand(h.ctx, {
        backend: sqliteBackend(h.ctx.database.sqlite),
        targets: ['nope'],
        tty: false,
        out,
      }),
    ).rejects.toThrow(/unknown resource "nope"/);
  });
});
