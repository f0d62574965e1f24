import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { type Cluster, createTestDatabase, startCluster, withAdmin } from '../helpers/postgres.js';
import { until } from '../ops/child.js';
import {
  findings,
  heldIssuance,
  notification,
  reconcileDaemonCases,
  reportApproved,
  startReconciler,
} from './reconcileDaemon.cases.js';
import { postgresReconcile } from './reconcileDaemonStores.js';

reconcileDaemonCases('postgres', async () => {
  const database = await createTestDatabase(inject('postgres'));
  const m = await postgresReconcile(database.url);
  return {
    ...m,
    close: async () => {
      await m.close();
      await database.drop();
    },
  };
});

describe('the reconciler on postgres only', () => {
  let cluster: Cluster | undefined;
  beforeAll(async () => {
    cluster = await startCluster();
  }, 120_000);
  afterAll(async () => {
    await cluster?.stop();
  });

  it('the server restarted while work was pending: it logs, retries, and the finding lands without a restart', async () => {
    const c = cluster as Cluster;
    const database = await createTestDatabase(c.info);
    const m = await postgresReconcile(database.url);
    // A long debounce: the reconciler does not pass on its own before the server goes away.
    const r = await startReconciler(m, { debounceMs: 600_000 });
    try {
      await heldIssuance(m, 7, 5, [101]);
      await until('the first (full) pass', () => r.passes.length >= 1);
      await reportApproved(m, [notification('Tokenization', 't-7', 7, 101, 10)]);
      await c.halt('fast');
      r.component.wake();
      await until('a failed round', () => r.lines().some((l) => l.event === 'reconcile.failed'));
      const failed = r.lines().find((l) => l.event === 'reconcile.failed');
      expect(failed).toMatchObject({ level: 'warn', failures: 1 });
      expect(String(failed?.error)).not.toContain(new URL(database.url).password);
      await c.resume();
      await until('the over-issuance', () => r.passes.some((p) => p.opened.length > 0));
      expect(await findings(m)).toEqual(['over-issuance issuance 7 open']);
      expect(r.passes.find((p) => p.opened.length > 0)?.scope).toEqual(['7']);
      expect(r.lines().some((l) => l.event === 'reconcile.recovered')).toBe(true);
      expect(r.lines().some((l) => l.event === 'reconcile.crashed')).toBe(false);
    } finally {
      await r.component.stop();
      await m.close();
    }
  }, 120_000);

  it("every backend of the reconciler's pool killed between rounds: the next round runs on new connections, the finding lands", async () => {
    const c = cluster as Cluster;
    const database = await createTestDatabase(c.info);
    const m = await postgresReconcile(database.url);
    const r = await startReconciler(m, { debounceMs: 600_000 });
    try {
      await heldIssuance(m, 8, 5, [108]);
      await until('the first (full) pass', () => r.passes.length >= 1);
      await reportApproved(m, [notification('Tokenization', 't-8', 8, 108, 10)]);
      // Every idle connection the pool holds is ended, as a failover or an operator's kill would.
      const killed = await withAdmin(c.info, async (admin) => {
        const { rows } = await admin.query<{ n: number }>(
          `SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity
            WHERE datname = $1 AND pid <> pg_backend_pid()`,
          [database.name],
        );
        return rows[0]?.n ?? 0;
      });
      expect(killed).toBeGreaterThan(0);
      r.component.wake();
      await until('the over-issuance', () => r.passes.some((p) => p.opened.length > 0));
      expect(await findings(m)).toEqual(['over-issuance issuance 8 open']);
      expect(r.lines().some((l) => l.event === 'reconcile.crashed')).toBe(false);
    } finally {
      await r.component.stop();
      await m.close();
    }
  }, 120_000);
});
