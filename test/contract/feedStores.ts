import { sqliteFeedReads } from '../../src/app/sqliteFeedReads.js';
import { ChangeSignal } from '../../src/db/changeSignal.js';
import { type FeedReads, feedReads } from '../../src/feed/feedReads.js';
import { listenForChanges } from '../../src/postgres/changeListener.js';
import { appendChangesPg, openPostgres } from '../../src/postgres/open.js';
import { postgresScriptStore } from '../../src/postgres/scripts.js';
import { recordChanges } from '../../src/sqlite/changes.js';
import { commitQueueFor } from '../../src/sqlite/commitQueue.js';
import type { ChangeRow } from '../../src/store/script.js';
import { testContext } from '../helpers/context.js';
import type { TestDatabase } from '../helpers/postgres.js';

/**
 * The change feed's two stores as the API's routes see them, for suites that run the same cases on
 * both: the feed's reads and signal, and a writer that commits rows the way the daemon does.
 * SQLite's writer is the group commit on the API's own handle; PostgreSQL's commits on a second
 * pool (another replica), so a waiting reader is woken by the NOTIFY through its own LISTEN.
 */
export interface FeedStore {
  readonly name: string;
  /** The context the API runs on (configuration, log). */
  readonly ctx: ReturnType<typeof testContext>;
  readonly feed: FeedReads;
  /** Commits `rows` in one transaction; resolves with the last seq once readers may see it. */
  commit(rows: ChangeRow[]): Promise<number>;
  /** The newest seq now. */
  head(): Promise<number>;
  close(): Promise<void>;
}

export type FeedStoreFactory = (overrides: Record<string, unknown>) => Promise<FeedStore>;

export const sqliteFeed: FeedStoreFactory = async (overrides) => {
  const ctx = testContext({ overrides });
  const sqlite = ctx.database.sqlite;
  return {
    name: 'SQLite',
    ctx,
    feed: sqliteFeedReads(sqlite),
    commit: (rows) =>
      commitQueueFor(sqlite).submit(() => {
        recordChanges(sqlite, rows);
        return Number(sqlite.prepare('SELECT max(seq) FROM changes').pluck().get());
      }),
    head: async () => Number(sqlite.prepare('SELECT coalesce(max(seq), 0) FROM changes').pluck().get()),
    async close() {
      ctx.dispose();
    },
  };
};

/** PostgreSQL's store on `database` (one per test file; cases read relative to the head). */
export function pgFeed(database: () => TestDatabase): FeedStoreFactory {
  return async (overrides) => {
    const ctx = testContext({ overrides });
    const reader = await openPostgres(database().url);
    const writer = await openPostgres(database().url, { migrate: false });
    const signal = new ChangeSignal();
    const listener = listenForChanges({ pool: reader.pool, signal });
    await listener.ready();
    return {
      name: 'PostgreSQL',
      ctx,
      feed: feedReads(postgresScriptStore(reader.pool), signal),
      commit: (rows) => appendChangesPg(writer.pool, rows),
      head: async () => feedReads(postgresScriptStore(writer.pool), signal).head(),
      async close() {
        await listener.stop();
        await reader.close();
        await writer.close();
        ctx.dispose();
      },
    };
  };
}
