import { performance } from 'node:perf_hooks';
import type pg from 'pg';
import { claimShared } from '../../src/operations/claim.js';
import type { NewOperation } from '../../src/operations/storeSeam.js';
import { openPostgres } from '../../src/postgres/open.js';
import { PgOperationsStore } from '../../src/postgres/operationsStore.js';
import { runPostgres } from '../../src/postgres/scripts.js';
import { CLAIM_PLAN_SQL } from '../../src/postgres/settleGroup.js';
import { createTestDatabase, startCluster } from '../helpers/postgres.js';
import { type BenchOptions, postgresMissing, ratioOf, type ScenarioResult } from './lib/result.js';

/** The marketplace: its operations fall on 50 units. */
const KEYS = 50;
/** Rows held out (sending) at once, as the daemon's dispatcher with claim-ahead holds them. */
const HELD = 32;
/** Rows settled per round, then the claim refills what they freed. */
const SETTLED_PER_ROUND = 8;
const T0 = Date.parse('2026-01-01T00:00:00.000Z');
const at = (ms: number) => new Date(T0 + ms).toISOString();

/**
 * One claim in a transaction of its own, its plan pinned as the dispatcher's group pins it: the ids
 * it took and its ms.
 */
async function timedClaim(client: pg.PoolClient, tick: number, limit: number) {
  await client.query('BEGIN');
  await client.query(CLAIM_PLAN_SQL);
  const start = performance.now();
  const { rows } = await runPostgres(
    client,
    claimShared({ now: at(tick), owner: 'bench', leaseUntil: at(tick + 600_000), limit }),
  );
  const ms = performance.now() - start;
  await client.query('COMMIT');
  return { ids: rows.map((r) => Number(r.id)), ms };
}

/**
 * The PostgreSQL claim as a unit's history grows (issue 30, item 1): `n` operations on 50 units
 * drained in rounds (8 settled, the claim refilling up to 32 held), each claim timed. The figure is
 * the mean claim over the last 10 % of the drain (each unit ~360 operations settled behind its next
 * row), against the first 10 % (none to ~40) in the same run: flat when a claim reads only the
 * unsent rows of a key, growing when it walks each key's settled history.
 */
export async function pgClaimHistoryScenario(options: BenchOptions): Promise<ScenarioResult[]> {
  if (postgresMissing('pgclaim', options)) return [];
  const n = options.quick ? 4_000 : 20_000;
  const cluster = await startCluster();
  try {
    const db = await openPostgres((await createTestDatabase(cluster.info)).url);
    try {
      const store = new PgOperationsStore(db.pool);
      const ops: NewOperation[] = Array.from({ length: n }, (_, i) => ({
        ref: `claim-${i}`,
        operationType: 'Transfer',
        orderKey: `unit:${i % KEYS}`,
        body: `{"n":${i}}`,
        hash: `h${i}`,
      }));
      for (let i = 0; i < n; i += 1_000) await store.insert(ops.slice(i, i + 1_000), at(0));
      options.say(`pgclaim: draining ${n} operations on ${KEYS} units, each claim timed`);
      const client = await db.pool.connect();
      const timings: Array<{ settledBefore: number; ms: number }> = [];
      try {
        const held: number[] = [];
        let settled = 0;
        for (let tick = 1; settled < n; tick++) {
          const claim = await timedClaim(client, tick, Math.max(1, HELD - held.length));
          timings.push({ settledBefore: settled, ms: claim.ms });
          held.push(...claim.ids);
          const done = held.splice(0, SETTLED_PER_ROUND);
          if (done.length === 0) throw new Error(`pgclaim: nothing claimable after ${settled} settled`);
          await client.query(
            `UPDATE outbox SET state = 'accepted', accepted_at = $1, lease_owner = NULL, lease_until = NULL
             WHERE id = ANY($2::int8[])`,
            [at(tick), done],
          );
          settled += done.length;
        }
      } finally {
        client.release();
      }
      const mean = (from: number, to: number) => {
        const picked = timings.filter((t) => t.settledBefore >= from && t.settledBefore < to);
        return picked.reduce((sum, t) => sum + t.ms, 0) / picked.length;
      };
      const early = mean(0, n * 0.1);
      const late = mean(n * 0.9, n);
      // Rates, so that the ratio reads like every other row: the late claims' rate over the early ones'.
      const ratio = ratioOf(1 / late, 1 / early)!;
      return [
        {
          scenario: `claim on PostgreSQL behind a unit's history, ${n} operations on ${KEYS} units`,
          measure: 'claims/s',
          value: 1000 / late,
          baseline: 1000 / early,
          ratio,
          target: '>= 0.8 x the first claims',
          met: ratio >= 0.8,
          notes: `mean claim over the last 10 % of the drain (~${Math.round((n * 0.9) / KEYS)} settled rows a unit) vs the first 10 %, same run: ${late.toFixed(2)} vs ${early.toFixed(2)} ms; up to ${HELD} held, ${SETTLED_PER_ROUND} settled a round; claim only, in-process, throwaway cluster (fsync off)`,
          extra: { lateMs: late, earlyMs: early, claims: timings.length },
        },
      ];
    } finally {
      await db.close();
    }
  } finally {
    await cluster.stop();
  }
}
