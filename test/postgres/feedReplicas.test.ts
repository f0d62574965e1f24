import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ChangeSignal } from '../../src/db/changeSignal.js';
import { feedReads } from '../../src/feed/feedReads.js';
import { type ChangeListener, listenForChanges } from '../../src/postgres/changeListener.js';
import { appendChangesPg, openPostgres, type PgDatabase } from '../../src/postgres/open.js';
import { pgOutbox } from '../../src/postgres/operationsStore.js';
import { postgresScriptStore } from '../../src/postgres/scripts.js';
import { testContext } from '../helpers/context.js';
import { apiCaller } from '../helpers/http.js';
import { useTestPgDatabase } from '../helpers/pgDatabase.js';
import { sqliteApiComponent } from '../helpers/sqliteApi.js';
import { tokenization } from '../outbox/fixtures.js';

/**
 * The issue's test: two replicas (two APIs, each on its own pool, its own LISTEN and its own
 * outbox through pgAccess.ts) take enqueues and cancels at the same time, while one reader per
 * API tails `/v1/changes?wait=` in small pages. Every change committed by either replica reaches
 * both readers: at the end the seqs each saw are exactly `SELECT seq FROM changes ORDER BY seq`
 * after where it started, none skipped, none twice. The writes really interleave (both replicas'
 * rows alternate in seq order), which is what would expose a seq handed out before a commit that
 * lands after a later one.
 */

const pg = useTestPgDatabase();
const TOKEN = 'feed-test-token-0123456789';
const PER_REPLICA = 120;
const WRITERS_PER_REPLICA = 6;
/** Readers ask small pages, so each one makes many requests while the writers run. */
const PAGE = 7;

interface Replica {
  name: string;
  db: PgDatabase;
  listener: ChangeListener;
  stop(): Promise<void>;
  call: ReturnType<typeof apiCaller>;
}

async function startReplica(name: string, url: string): Promise<Replica> {
  const ctx = testContext({ overrides: { 'api.listen': '127.0.0.1:0', 'api.token': TOKEN } });
  const db = await openPostgres(url, { migrate: false });
  const signal = new ChangeSignal();
  const listener = listenForChanges({ pool: db.pool, signal });
  await listener.ready();
  const api = sqliteApiComponent(ctx, {
    outbox: pgOutbox(ctx, db.pool, {}),
    feed: feedReads(postgresScriptStore(db.pool), signal),
  });
  await api.start();
  return {
    name,
    db,
    listener,
    call: apiCaller(`http://127.0.0.1:${api.address()!.port}`, TOKEN),
    async stop() {
      await api.stop();
      await listener.stop();
      await db.close();
      ctx.dispose();
    },
  };
}

/** Enqueues `count` operations through one replica's API, `lanes` at a time; cancels every third. */
async function write(replica: Replica, count: number, lanes: number): Promise<void> {
  let next = 0;
  const lane = async () => {
    while (next < count) {
      const i = next++;
      const ref = `${replica.name}-${i}`;
      const queued = await replica.call('POST', '/v1/operations', tokenization(ref, { unitId: 1_000 + i }));
      expect(queued.status, ref).toBe(201);
      if (i % 3 === 0) {
        const cancelled = await replica.call('POST', `/v1/operations/${ref}/cancel`);
        expect(cancelled.status, `cancel ${ref}`).toBe(200);
      }
    }
  };
  await Promise.all(Array.from({ length: lanes }, lane));
}

/** Tails one API's feed from `after` until it has read `until()` (a seq, once known). */
async function tail(replica: Replica, after: number, until: () => number | null): Promise<number[]> {
  const seen: number[] = [];
  let last = after;
  for (;;) {
    const end = until();
    if (end !== null && last >= end) return seen;
    const page = await replica.call('GET', `/v1/changes?after=${last}&limit=${PAGE}&wait=30`);
    expect(page.status).toBe(200);
    for (const item of page.json.items as Array<{ seq: number }>) seen.push(item.seq);
    last = page.json.last;
  }
}

describe('the change feed read through two replicas while both write', () => {
  let a: Replica;
  let b: Replica;
  beforeAll(async () => {
    a = await startReplica('a', pg.database.url);
    b = await startReplica('b', pg.database.url);
  });
  afterAll(async () => {
    await a?.stop();
    await b?.stop();
  });

  it('a reader on each API sees every change either replica commits, in seq order, none skipped, none twice', async () => {
    const start = await feedReads(postgresScriptStore(pg.db.pool), new ChangeSignal()).head();
    let end: number | null = null;
    const readers = [tail(a, start, () => end), tail(b, start, () => end)];
    await Promise.all([
      write(a, PER_REPLICA, WRITERS_PER_REPLICA),
      write(b, PER_REPLICA, WRITERS_PER_REPLICA),
    ]);
    // One last change, made after every write: the readers stop once they have read it (and a
    // reader waiting at the head is answered by it rather than by the end of its wait).
    end = await appendChangesPg(pg.db.pool, [
      { resource: 'test', recordId: 'end', kind: 'insert', at: new Date().toISOString() },
    ]);
    const [seenA, seenB] = await Promise.all(readers);

    const table = await pg.db.pool.query<{ seq: number; record_id: string }>(
      'SELECT seq::float8 AS seq, record_id FROM changes WHERE seq > $1 ORDER BY seq',
      [start],
    );
    const committed = table.rows.map((r) => r.seq);
    // Every enqueue and every cancel made a change, and the end marker.
    expect(committed.length).toBe(2 * (PER_REPLICA + Math.ceil(PER_REPLICA / 3)) + 1);
    expect(committed.at(-1)).toBe(end);
    expect(seenA).toEqual(committed);
    expect(seenB).toEqual(committed);

    // The two replicas' writes interleaved in the feed, not one after the other.
    const writers = table.rows.filter((r) => r.record_id !== 'end').map((r) => r.record_id.slice(0, 2));
    const switches = writers.filter((w, i) => i > 0 && w !== writers[i - 1]).length;
    expect(switches).toBeGreaterThan(10);
  });
});
