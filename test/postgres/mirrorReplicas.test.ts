import { afterEach, describe, expect, inject, it } from 'vitest';
import { startRun } from '../../src/mirror/backend.js';
import { emptyCounts } from '../../src/mirror/bookkeeping.js';
import { custodyResources, listResources } from '../../src/mirror/resources.js';
import { finishRun } from '../../src/mirror/statements.js';
import { type RunOutcome, runSync } from '../../src/mirror/syncRun.js';
import { interruptOrphanedRuns, pgBackend } from '../../src/postgres/mirror.js';
import { openPostgres, type PgDatabase } from '../../src/postgres/open.js';
import { run } from '../../src/store/script.js';
import { expectCustodyEquals, expectMirrorEquals, pgMirror } from '../contract/mirrorStores.js';
import { createTestDatabase, type TestDatabase } from '../helpers/postgres.js';
import { captureLog, type Harness, harness, noSleep } from '../mirror/harness.js';

/**
 * One run of a resource at a time across replicas sharing one PostgreSQL database: two pools are
 * two replicas. A run holds the resource's advisory lock on a connection of its own; the other
 * replica skips. A replica whose connection dies loses the lock with it: the next run, on another
 * replica, goes and marks the dead run interrupted. The custody sync runs under the same lock.
 */

const PROJECTS = '/integration/v1/projects';
const cluster = inject('postgres');

let h: Harness | undefined;
let database: TestDatabase | undefined;
const stores: PgDatabase[] = [];
afterEach(async () => {
  for (const s of stores.splice(0)) await s.close();
  await database?.drop();
  await h?.close();
  h = undefined;
  database = undefined;
});

async function twoReplicas() {
  h = await harness({ projects: 230 }, { 'sync.page_size': 50, 'sync.page_attempts': 3 });
  database = await createTestDatabase(cluster);
  const a = await openPostgres(database.url, { max: 4 });
  const b = await openPostgres(database.url, { max: 4, migrate: false });
  stores.push(a, b);
  return { a, b, backendA: pgBackend(a.pool), backendB: pgBackend(b.pool) };
}

/** The next page request fails once: the run waits to retry it. */
const failNextPage = () => h!.sim.faults.next(1, '503', { pathPrefix: PROJECTS });

/**
 * A retry wait of replica A that runs `during` while A holds its run (after {@link failNextPage});
 * `finished` settles when `during` has, even if A stopped waiting for it.
 */
function pauseOnce(during: () => Promise<void>) {
  let started: Promise<void> | undefined;
  return {
    sleep: async (_ms: number) => {
      if (started) return;
      started = during();
      await started;
    },
    finished: () => started ?? Promise.reject(new Error('replica A never waited')),
  };
}

const runRows = async (db: PgDatabase) =>
  (
    await db.pool.query<{ id: string; status: string; error: string | null }>(
      'SELECT id, status, error FROM sync_runs ORDER BY id',
    )
  ).rows;

describe('replicas on one PostgreSQL database', () => {
  it('two runs of the same resource at once: one runs, the other skips; never both', async () => {
    const { a, backendA, backendB } = await twoReplicas();
    const lines = captureLog(h!.ctx);
    let skipped: RunOutcome | undefined;
    let runningDuringB = 0;
    const pause = pauseOnce(async () => {
      runningDuringB = (await runRows(a)).filter((r) => r.status === 'running').length;
      skipped = await runSync(h!.ctx, 'projects', { backend: backendB, sleep: noSleep });
    });
    failNextPage();
    const outcome = await runSync(h!.ctx, 'projects', { backend: backendA, sleep: pause.sleep });
    await pause.finished();
    expect(runningDuringB).toBe(1);
    expect(skipped).toMatchObject({
      status: 'failed',
      runId: null,
      error: 'projects: another replica is already syncing it',
    });
    expect(lines.filter((l) => l.event === 'sync.run.skipped').map((l) => l.resource)).toEqual(['projects']);
    expect(outcome).toMatchObject({ status: 'succeeded', counts: { inserted: 230 } });
    // One row: the skipped run never started one.
    expect((await runRows(a)).map((r) => r.status)).toEqual(['succeeded']);
    await expectMirrorEquals(pgMirror(a), h!, ['projects']);
    // The lock went with the run: the other replica runs next.
    expect(await runSync(h!.ctx, 'projects', { backend: backendB, sleep: noSleep })).toMatchObject({
      status: 'succeeded',
      counts: { unchanged: 230 },
    });
  });

  it('the holder’s connection killed mid-run: it stops at once, and the other replica runs on from its checkpoint', async () => {
    const { a, b, backendA, backendB } = await twoReplicas();
    const pause = pauseOnce(async () => {
      // Replica A's lock connection dies (a cut network, a restarted pooler): its lock goes with it.
      await terminateLockHolder(b);
    });
    let failed = false;
    const first = await runSync(h!.ctx, 'projects', {
      backend: backendA,
      sleep: pause.sleep,
      // After the first page's commit: the next request to reach the simulator fails and waits to
      // retry. That is the second page's (asked for ahead, before the commit) when it arrives after
      // this, else the third's, the second then committing on its own (pages commit one by one here).
      onProgress: () => {
        if (!failed) failNextPage();
        failed = true;
      },
    });
    await pause.finished();
    // A noticed it lost its lock and stopped instead of writing on (its wait was cut short).
    expect(first.status).toBe('interrupted');
    expect([50, 50 + 49]).toContain(first.counts.inserted);
    expect(first.error).toBe(
      'projects: the database connection holding the run lock ended; the next run resumes from the checkpoint',
    );
    const second = await runSync(h!.ctx, 'projects', { backend: backendB, sleep: noSleep });
    expect(second).toMatchObject({ status: 'succeeded', counts: { inserted: 230 - first.counts.inserted } });
    expect((await runRows(a)).map((r) => r.status)).toEqual(['interrupted', 'succeeded']);
    await expectMirrorEquals(pgMirror(a), h!, ['projects']);
  });

  it('a replica that dies mid-run: the next run, on another replica, goes and marks the dead run interrupted', async () => {
    const { a, b, backendA, backendB } = await twoReplicas();
    const lines = captureLog(h!.ctx);
    // Replica A takes the run and starts its row, then dies: its row stays `running`, and the
    // server drops its session (here: terminated), which frees its lock.
    const acquired = await backendA.lock.acquire(h!.ctx, 'projects');
    expect(acquired.ok).toBe(true);
    const deadRun = await startRun(
      backendA.db,
      'projects',
      'full',
      'schedule',
      new Date().toISOString(),
      null,
    );
    expect((await runSync(h!.ctx, 'projects', { backend: backendB, sleep: noSleep })).error).toBe(
      'projects: another replica is already syncing it',
    );
    await terminateLockHolder(b);
    // The fence: had the dead replica a batch still in flight, it would not commit.
    if (!acquired.ok) throw new Error('unreachable');
    const projects = listResources(h!.ctx.config).projects;
    const late = backendA.store(projects, () => new Date().toISOString(), acquired.lease);
    const [, record] = [...h!.sim.registry.snapshot('projects')][0]!;
    await expect(
      late.commitBatch({
        runId: deadRun,
        records: [{ value: record, position: null }],
        trackSeen: false,
        checkpoint: null,
        counts: emptyCounts(),
      }),
    ).rejects.toThrow('the database connection holding the run lock ended');
    expect((await a.pool.query('SELECT count(*)::int AS n FROM projects')).rows[0].n).toBe(0);
    const next = await runSync(h!.ctx, 'projects', { backend: backendB, sleep: noSleep });
    expect(next).toMatchObject({ status: 'succeeded', counts: { inserted: 230 } });
    const rows = await runRows(a);
    expect(rows.map((r) => [Number(r.id), r.status, r.error])).toEqual([
      [deadRun, 'interrupted', 'the replica running it ended before it finished'],
      [next.runId, 'succeeded', null],
    ]);
    expect(lines.filter((l) => l.event === 'sync.run.interrupted').map((l) => l.runId)).toEqual([deadRun]);
    await expectMirrorEquals(pgMirror(a), h!, ['projects']);
    await acquired.lease.release();
    // The dead replica's lease, released late, does not take the lock from anyone.
    expect(await runSync(h!.ctx, 'projects', { backend: backendA, sleep: noSleep })).toMatchObject({
      status: 'succeeded',
      counts: { unchanged: 230 },
    });
  });

  it('a survivor’s sweep marks a dead replica’s run interrupted at once; a live replica’s run is left running', async () => {
    const { a, b, backendA, backendB } = await twoReplicas();
    const lines = captureLog(h!.ctx);
    const acquired = await backendA.lock.acquire(h!.ctx, 'projects');
    expect(acquired.ok).toBe(true);
    const deadRun = await startRun(
      backendA.db,
      'projects',
      'full',
      'schedule',
      new Date().toISOString(),
      null,
    );
    await terminateLockHolder(b);
    // B runs issuances meanwhile: its lock is held, so its row is not an orphan.
    const live = await backendB.lock.acquire(h!.ctx, 'issuances');
    if (!live.ok) throw new Error('B could not take the issuances lock');
    const liveRun = await startRun(
      backendB.db,
      'issuances',
      'full',
      'schedule',
      new Date().toISOString(),
      null,
    );

    expect(await interruptOrphanedRuns(b.pool, h!.ctx.log, '2026-11-26T12:00:00.000Z')).toBe(1);
    const rows = await runRows(a);
    expect(rows.map((r) => [Number(r.id), r.status, r.error])).toEqual([
      [deadRun, 'interrupted', 'the replica running it ended before it finished'],
      [liveRun, 'running', null],
    ]);
    expect(lines.filter((l) => l.event === 'sync.run.interrupted').map((l) => l.runId)).toEqual([deadRun]);
    // Nothing more to mark on the next sweep, and no lock is left behind by this one: B's
    // projects run starts at once.
    expect(await interruptOrphanedRuns(b.pool, h!.ctx.log, '2026-11-26T12:00:02.000Z')).toBe(0);
    await backendB.db.write(
      run(finishRun(liveRun, new Date().toISOString(), 'succeeded', null, emptyCounts())),
    );
    await live.lease.release();
    expect(await runSync(h!.ctx, 'projects', { backend: backendB, sleep: noSleep })).toMatchObject({
      status: 'succeeded',
      counts: { inserted: 230 },
    });
    if (acquired.ok) await acquired.lease.release();
  });

  it('custody too: the other replica skips while one runs; the holder’s connection killed, it stops and cannot end a custody; the other runs it', async () => {
    const { a, b, backendA, backendB } = await twoReplicas();
    let skipped: RunOutcome | undefined;
    const pause = pauseOnce(async () => {
      skipped = await runSync(h!.ctx, 'custody', { backend: backendB, sleep: noSleep });
      await terminateLockHolder(b);
    });
    // The first custody unit read fails: projects (3) and issuances (5) are in, A waits to retry.
    h!.sim.faults.next(1, '503', { pathPrefix: '/integration/v1/units/' });
    const first = await runSync(h!.ctx, 'custody', { backend: backendA, sleep: pause.sleep });
    await pause.finished();
    expect(skipped?.error).toBe('custody: another replica is already syncing it');
    expect(first).toMatchObject({ status: 'interrupted', counts: { inserted: 8 } });
    const second = await runSync(h!.ctx, 'custody', { backend: backendB, sleep: noSleep });
    expect(second).toMatchObject({
      status: 'succeeded',
      counts: { fetched: 18, inserted: 10, unchanged: 8 },
    });
    expect((await runRows(a)).map((r) => r.status)).toEqual(['interrupted', 'succeeded']);
    await expectCustodyEquals(pgMirror(a), h!);

    // A replica that lost its lock cannot end an id's custody either (the fence).
    const acquired = await backendA.lock.acquire(h!.ctx, 'custody');
    if (!acquired.ok) throw new Error(acquired.error);
    const runId = await startRun(backendA.db, 'custody', 'full', 'schedule', new Date().toISOString(), null);
    await terminateLockHolder(b);
    const units = custodyResources(h!.ctx.config)[2]!;
    const late = backendA.store(units, () => new Date().toISOString(), acquired.lease);
    const id = String(h!.sim.registry.custodyIds('units')[0]);
    await expect(late.endCustody(runId, 'units', id, emptyCounts())).rejects.toThrow(
      'the database connection holding the run lock ended',
    );
    await acquired.lease.release();
    expect(
      (await a.pool.query('SELECT count(*)::int AS n FROM custody_ids WHERE ended_at IS NOT NULL')).rows[0].n,
    ).toBe(0);
  });
});

/** Ends the session holding the (one) run lock of the test's database, as a dead replica's ends. */
async function terminateLockHolder(via: PgDatabase): Promise<void> {
  const holders = await via.pool.query<{ pid: number }>(
    `SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted
       AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
  );
  expect(holders.rows).toHaveLength(1);
  // With a timeout, pg_terminate_backend waits until the backend is gone (and its locks freed).
  const killed = await via.pool.query<{ ok: boolean }>('SELECT pg_terminate_backend($1, 10000) AS ok', [
    holders.rows[0]!.pid,
  ]);
  expect(killed.rows[0]!.ok).toBe(true);
}
