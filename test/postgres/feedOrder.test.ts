import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { FEED_CHANNEL, recordChangesPg } from '../../src/postgres/changes.js';
import { appendChangesPg, inPgTransaction, openPostgres, type PgDatabase } from '../../src/postgres/open.js';
import { createTestDatabase, type TestDatabase } from '../helpers/postgres.js';

/**
 * The feed's promise on PostgreSQL: a reader that pages by `seq > last` never skips a row, even
 * when writers commit out of the order they started in. Writers hold their transactions open for
 * a varying number of round trips before and after recording their rows, so without the feed lock
 * (taken by the append that rides each COMMIT) a later seq would commit before an earlier one and
 * the tailing reader would step past it.
 */
describe('recordChangesPg on a real server', () => {
  const cluster = inject('postgres');
  let database: TestDatabase;
  let store: PgDatabase;

  beforeAll(async () => {
    database = await createTestDatabase(cluster);
    store = await openPostgres(database.url, { max: 12 });
  });
  afterAll(async () => {
    await store?.close();
    await database?.drop();
  });

  it('a reader tailing by seq sees every row committed by eight concurrent writers', async () => {
    const writers = 8;
    const perWriter = 40;
    let writing = true;
    const seen: string[] = [];
    const tail = (async () => {
      let last = 0;
      for (;;) {
        const done = !writing;
        const { rows } = await store.pool.query<{ seq: string; record_id: string }>(
          'SELECT seq, record_id FROM changes WHERE seq > $1 ORDER BY seq LIMIT 50',
          [last],
        );
        for (const row of rows) {
          seen.push(row.record_id);
          last = Number(row.seq);
        }
        if (done && rows.length === 0) return;
      }
    })();
    await Promise.all(
      Array.from({ length: writers }, async (_, w) => {
        for (let i = 0; i < perWriter; i++) {
          await inPgTransaction(store.pool, async (client) => {
            // Other statements first: the feed's lock is taken only by the append at the commit.
            for (let k = 0; k < (i + w) % 3; k++) await client.query('SELECT 1');
            recordChangesPg(client, [
              {
                resource: 'operations',
                recordId: `w${w}-${i}-a`,
                kind: 'queued',
                at: new Date().toISOString(),
              },
              {
                resource: 'operations',
                recordId: `w${w}-${i}-b`,
                kind: 'queued',
                at: new Date().toISOString(),
              },
            ]);
            // Still open after recording: the rows wait for the commit, which appends them.
            for (let k = 0; k < (i + w) % 2; k++) await client.query('SELECT 1');
          });
        }
      }),
    );
    writing = false;
    await tail;
    const { rows: all } = await store.pool.query<{ record_id: string }>(
      'SELECT record_id FROM changes ORDER BY seq',
    );
    expect(all).toHaveLength(writers * perWriter * 2);
    expect(seen).toEqual(all.map((r) => r.record_id));
    // Within one transaction the rows keep the order they were given.
    const a = all.findIndex((r) => r.record_id === 'w3-7-a');
    expect(all[a + 1]?.record_id).toBe('w3-7-b');
  });

  it('keeps every character of the rows it appends, and their order, through the commit message', async () => {
    const odd = [
      "it's",
      'back\\slash',
      'quote"d',
      "both ' and \\ '' E'x'",
      'line\nbreak',
      'ünïcødé 🌱',
      '$1 $$ ; COMMIT',
    ];
    const at = '2026-11-23T10:00:00.123Z';
    await appendChangesPg(
      store.pool,
      odd.map((recordId, i) => ({ resource: 'odd', recordId, kind: `k${i}`, at })),
    );
    const { rows } = await store.pool.query<{ record_id: string; kind: string; at: Date }>(
      "SELECT record_id, kind, at FROM changes WHERE resource = 'odd' ORDER BY seq",
    );
    expect(rows.map((r) => r.record_id)).toEqual(odd);
    expect(rows.map((r) => r.kind)).toEqual(odd.map((_, i) => `k${i}`));
    expect(rows.every((r) => r.at.toISOString() === at)).toBe(true);
  });

  it('refuses rows recorded outside inPgTransaction rather than dropping them', async () => {
    const client = await store.pool.connect();
    try {
      expect(() =>
        recordChangesPg(client, [
          { resource: 'x', recordId: 'lost', kind: 'insert', at: new Date().toISOString() },
        ]),
      ).toThrow(/not in an inPgTransaction/);
    } finally {
      client.release();
    }
  });

  it('appends nothing when the work fails after recording its rows', async () => {
    await expect(
      inPgTransaction(store.pool, async (client) => {
        recordChangesPg(client, [
          { resource: 'x', recordId: 'after-fail', kind: 'insert', at: new Date().toISOString() },
        ]);
        await client.query('SELECT 1/0');
      }),
    ).rejects.toThrow(/division by zero/);
    const { rows } = await store.pool.query("SELECT 1 FROM changes WHERE record_id = 'after-fail'");
    expect(rows).toHaveLength(0);
    // The connection went back clean: the next transaction commits its rows.
    await appendChangesPg(store.pool, [
      { resource: 'x', recordId: 'next', kind: 'insert', at: new Date().toISOString() },
    ]);
    const next = await store.pool.query("SELECT 1 FROM changes WHERE record_id = 'next'");
    expect(next.rows).toHaveLength(1);
  });

  it('wakes listeners once the transaction commits, and never for one rolled back', async () => {
    const listener = await store.pool.connect();
    const heard: string[] = [];
    listener.on('notification', (n) => {
      if (n.channel === FEED_CHANNEL) heard.push(n.payload ?? '');
    });
    await listener.query(`LISTEN ${FEED_CHANNEL}`);
    try {
      await expect(
        inPgTransaction(store.pool, async (client) => {
          recordChangesPg(client, [
            { resource: 'projects', recordId: 'p-rolled', kind: 'insert', at: new Date().toISOString() },
          ]);
          throw new Error('rolled back on purpose');
        }),
      ).rejects.toThrow('rolled back on purpose');
      const last = await appendChangesPg(store.pool, [
        { resource: 'projects', recordId: 'p-kept', kind: 'insert', at: new Date().toISOString() },
      ]);
      // A round trip on the listening connection delivers notifications that arrived before it.
      await listener.query('SELECT 1');
      expect(heard).toEqual([String(last)]);
      const { rows } = await store.pool.query('SELECT record_id FROM changes WHERE record_id LIKE $1', [
        'p-%',
      ]);
      expect(rows).toEqual([{ record_id: 'p-kept' }]);
    } finally {
      await listener.query(`UNLISTEN ${FEED_CHANNEL}`);
      listener.release();
    }
  });
});
