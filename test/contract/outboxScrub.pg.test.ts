import { describe, expect, it } from 'vitest';
import { isoAt } from '../../src/common/clock.js';
import { SCRUB_BATCH } from '../../src/outbox/scrub.js';
import { PgOperationsStore, pgOutboxHooks } from '../../src/postgres/operationsStore.js';
import { useTestPgDatabase } from '../helpers/pgDatabase.js';
import { hostilePeople } from '../privacy/leaks.js';
import {
  AFTER_DAYS,
  ATTEMPTS,
  EVENTS,
  NOW,
  outboxScrubCases,
  queue,
  ROWS,
  type ScrubHarness,
  T0,
  type Texts,
} from './outboxScrub.cases.js';

/**
 * The scrub's contract on PostgreSQL (the file's database emptied after each case); then what only
 * PostgreSQL has: the scrub's old row versions are vacuumable.
 */

const pg = useTestPgDatabase();

function postgresHarness(): ScrubHarness {
  const { pool } = pg.db;
  const all = async <T>(sql: string) => (await pool.query(sql)).rows as T[];
  return {
    hooks: pgOutboxHooks(pool),
    ops: new PgOperationsStore(pool),
    run: async (sql, params) => {
      await pool.query(sql, params);
    },
    rows: () =>
      all<Texts>(
        ROWS.replace(
          'scrubbed_at FROM',
          `to_char(scrubbed_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS scrubbed_at FROM`,
        ),
      ),
    attempts: () => all(ATTEMPTS.replace('outbox_id,', 'outbox_id::float8 AS outbox_id,')),
    events: () => all(EVENTS.replace('id,', 'id::float8 AS id,')),
    close: async () => {
      await pool.query(
        'TRUNCATE outbox, outbox_attempts, webhook_events, changes, deliveries RESTART IDENTITY CASCADE',
      );
    },
  };
}

outboxScrubCases('postgres', async () => postgresHarness());

describe('scrub on postgres: its old row versions are vacuumable', () => {
  it('commits batch by batch (a transaction id each), holding no snapshot, so VACUUM finds no old version it may not remove', async () => {
    const h = postgresHarness();
    const client = await pg.db.pool.connect();
    try {
      const count = 2 * SCRUB_BATCH + 1;
      await queue(
        h,
        Array.from(
          { length: count },
          (_, i) => [`vacuum-${i}`, hostilePeople(i)] as [string, Record<string, string>],
        ),
      );
      await h.run(`UPDATE outbox SET state = 'cancelled', finished_at = $1`, [isoAt(T0)]);
      // Only the scrub's own dead versions from here on.
      await client.query('VACUUM outbox');
      expect(await h.hooks.scrubFinished(NOW, AFTER_DAYS)).toBe(count);
      // The rows were rewritten by three transactions, one per batch, each committed on its own:
      // the first batch's old versions were dead while the later batches ran.
      const writers = await client.query<{ n: number }>(
        'SELECT count(DISTINCT xmin::text)::int AS n FROM outbox WHERE scrubbed_at IS NOT NULL',
      );
      expect(writers.rows[0]?.n).toBe(3);
      const report: string[] = [];
      const onNotice = (notice: { message?: string }) => report.push(notice.message ?? '');
      client.on('notice', onNotice);
      await client.query('VACUUM (VERBOSE) outbox');
      client.off('notice', onNotice);
      const tuples = report
        .join('\n')
        .match(/tuples: (\d+) removed, (\d+) remain, (\d+) are dead but not yet removable/);
      expect(tuples, report.join('\n')).not.toBeNull();
      // (Most old versions are pruned before VACUUM gets there, by the reads that passed them.)
      expect(Number(tuples![3])).toBe(0);
    } finally {
      client.release();
      await h.close();
    }
  });
});
