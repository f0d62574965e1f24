import path from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { isoAt } from '../../src/clock.js';
import { openDatabase } from '../../src/db/open.js';
import { maskedEventText } from '../../src/inbox/mask.js';
import { PgOperationsStore } from '../../src/operations/pgStore.js';
import { SqliteOperationsStore } from '../../src/operations/sqliteStore.js';
import type { OperationsStore } from '../../src/operations/storeSeam.js';
import { type OutboxHooks, sqliteOutboxHooks } from '../../src/outbox/hooks.js';
import { pgOutboxHooks } from '../../src/outbox/pgHooks.js';
import { SCRUB_BATCH, SCRUBBED, scrubbedTextsOf } from '../../src/outbox/scrub.js';
import { tempDir } from '../helpers/context.js';
import { useTestPgDatabase } from '../helpers/pgDatabase.js';
import { findAll, hostilePeople, personalNeedles } from '../privacy/leaks.js';

/**
 * The scrub of finished rows through the dispatcher's hooks, the same cases on SQLite (a temp file)
 * and PostgreSQL: the same rows scrubbed, the same columns masked to the same text, the webhook
 * events with them, open and recent rows left alone.
 */

const T0 = Date.parse('2026-01-01T00:00:00.000Z');
const NOW = Date.parse('2026-03-01T00:00:00.000Z');
const AFTER_DAYS = 30;

interface Texts {
  ref: string;
  body: string;
  body_hash: string;
  response: string | null;
  last_error: string | null;
  decision_reason: string | null;
  scrubbed_at: string | null;
}

interface ScrubHarness {
  hooks: OutboxHooks;
  ops: OperationsStore;
  /** One statement, `$n` placeholders (both dialects read the quoted identifiers). */
  run(sql: string, params: unknown[]): Promise<void>;
  rows(): Promise<Texts[]>;
  attempts(): Promise<Array<{ outbox_id: number; error: string | null }>>;
  events(): Promise<Array<{ id: number; body: string; reason: string | null }>>;
  close(): Promise<void>;
}

const ROWS = `SELECT "marketplaceTransactionRef" AS ref, body, body_hash, response, last_error, decision_reason,
  scrubbed_at FROM outbox ORDER BY id`;
const ATTEMPTS = 'SELECT outbox_id, error FROM outbox_attempts ORDER BY id';
const EVENTS = 'SELECT id, body, reason FROM webhook_events ORDER BY id';

function sqliteHarness(): ScrubHarness {
  const { dir, cleanup } = tempDir();
  const database = openDatabase(path.join(dir, 'scrub.db'));
  const { sqlite } = database;
  const all = <T>(sql: string) => sqlite.prepare(sql).all() as T[];
  return {
    hooks: sqliteOutboxHooks(sqlite),
    ops: new SqliteOperationsStore(sqlite),
    run: async (sql, params) => {
      const named = Object.fromEntries(params.map((v, i) => [`p${i + 1}`, v]));
      sqlite.prepare(sql.replace(/\$(\d+)/g, '@p$1')).run(named);
    },
    rows: async () => all<Texts>(ROWS),
    attempts: async () => all(ATTEMPTS),
    events: async () => all(EVENTS),
    close: async () => {
      database.close();
      cleanup();
    },
  };
}

const pg = useTestPgDatabase();

function postgresHarness(): ScrubHarness {
  const { pool } = pg.db;
  const all = async <T>(sql: string) => (await pool.query(sql)).rows as T[];
  return {
    hooks: pgOutboxHooks(pool),
    ops: new PgOperationsStore(pool, { leaseOwner: 'scrubber' }),
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

const bodyOf = (ref: string, people: Record<string, string>) =>
  JSON.stringify({ marketplaceTransactionRef: ref, operationType: 'Transfer', unitId: 101, ...people });

/** Queues each ref, its body naming its people. */
async function queue(h: ScrubHarness, refs: ReadonlyArray<[string, Record<string, string>]>): Promise<void> {
  await h.ops.insert(
    refs.map(([ref, people]) => ({
      ref,
      operationType: 'Transfer',
      orderKey: null,
      body: bodyOf(ref, people),
      hash: `h-${ref}`,
    })),
    isoAt(T0),
  );
}

/** Moves row `id` to a final state finished at `finishedMs`, every text quoting `echo` (as an older version stored them). */
function finish(h: ScrubHarness, id: number, finishedMs: number, echo: string): Promise<void> {
  return h.run(
    `UPDATE outbox SET state = 'rejected', response = $1, last_error = $1, decision_reason = $1,
       finished_at = $2, decided_at = $2 WHERE id = $3`,
    [echo, isoAt(finishedMs), id],
  );
}

describe.each(['sqlite', 'postgres'] as const)('scrub of finished rows on %s', (dialect) => {
  let h: ScrubHarness;
  beforeEach(() => {
    h = dialect === 'sqlite' ? sqliteHarness() : postgresHarness();
    return () => h.close();
  });

  it('masks every column of an old finished row and its webhook events; open and recent rows keep theirs', async () => {
    const [old, open, recent] = [hostilePeople(3), hostilePeople(4), hostilePeople(5)];
    await queue(h, [
      ['scrub-old-1', old],
      ['scrub-open-2', open],
      ['scrub-recent-3', recent],
    ]);
    const echo = JSON.stringify({ message: `bad ${old.originUserName}`, request: old });
    await finish(h, 1, T0, echo);
    await finish(h, 3, NOW - 86_400_000, JSON.stringify({ request: recent }));
    await h.run(
      `INSERT INTO outbox_attempts (outbox_id, started_at, duration_ms, status_code, error) VALUES (1, $1, 5, 422, $2)`,
      [isoAt(T0), echo],
    );
    await h.run(
      `INSERT INTO webhook_events (webhook_id, received_at, "marketplaceTransactionRef", decision, reason, body, outcome)
       VALUES ('msg_1', $1, 'scrub-old-1', 'rejected', $2, $3, 'applied')`,
      [isoAt(T0), `no funds for ${old.destinationUserEmail}`, echo],
    );
    const [before] = await h.rows();
    const [eventBefore] = await h.events();

    expect(await h.hooks.scrubFinished(NOW, AFTER_DAYS)).toBe(1);

    const [scrubbed, openRow, recentRow] = await h.rows();
    const attempts = await h.attempts();
    const events = await h.events();
    // Nothing of the old row's people is left anywhere it was.
    const cells = [
      ...Object.entries(scrubbed ?? {}).map(([column, text]) => ({
        where: `outbox.${column}`,
        text: String(text),
      })),
      ...attempts.map((a) => ({ where: 'outbox_attempts.error', text: String(a.error) })),
      ...events.flatMap((e) => [
        { where: 'webhook_events.body', text: e.body },
        { where: 'webhook_events.reason', text: String(e.reason) },
      ]),
    ];
    expect(findAll(cells, personalNeedles([old], false)).map((f) => `${f.where}: ${f.needle}`)).toEqual([]);
    // Each column holds what the one pure decision says, on both stores.
    const decided = scrubbedTextsOf({
      id: 1,
      body: before?.body ?? '',
      texts: before,
      attempts: [{ id: 1, error: echo }],
    });
    expect(scrubbed).toEqual({
      ref: 'scrub-old-1',
      body: decided.texts.body,
      body_hash: 'h-scrub-old-1',
      response: decided.texts.response,
      last_error: decided.texts.lastError,
      decision_reason: decided.texts.decisionReason,
      scrubbed_at: isoAt(NOW),
    });
    expect(JSON.parse(scrubbed?.body ?? '{}')).toMatchObject({ originUserName: SCRUBBED, unitId: 101 });
    expect(attempts).toEqual([{ outbox_id: 1, error: decided.texts.attemptErrors[0]?.error }]);
    const eventAfter = eventBefore && maskedEventText(eventBefore, decided.mask);
    expect(events).toEqual([eventAfter]);
    // The open row keeps its body for the operator, the recent one until its time comes.
    expect(openRow).toMatchObject({ body: bodyOf('scrub-open-2', open), scrubbed_at: null });
    expect(recentRow).toMatchObject({ body: bodyOf('scrub-recent-3', recent), scrubbed_at: null });
    // Scrubbed once: the next run finds nothing.
    expect(await h.hooks.scrubFinished(NOW, AFTER_DAYS)).toBe(0);
  });

  it('scrubs a backlog larger than a batch whole', async () => {
    const count = SCRUB_BATCH + 1;
    await queue(
      h,
      Array.from(
        { length: count },
        (_, i) => [`backlog-${i}`, hostilePeople(i)] as [string, Record<string, string>],
      ),
    );
    await h.run(`UPDATE outbox SET state = 'cancelled', finished_at = $1`, [isoAt(T0)]);
    expect(await h.hooks.scrubFinished(NOW, AFTER_DAYS)).toBe(count);
    const rows = await h.rows();
    expect(rows.filter((r) => r.scrubbed_at === isoAt(NOW))).toHaveLength(count);
    expect(
      findAll(
        rows.map((r) => ({ where: r.ref, text: r.body })),
        personalNeedles([hostilePeople(0)], false),
      ),
    ).toEqual([]);
  });
});

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
