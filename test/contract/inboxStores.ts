import path from 'node:path';
import { loadConfig } from '../../src/config/config.js';
import { bodyHash, type ReceivedWebhook } from '../../src/inbox/correlate.js';
import { InboxStore } from '../../src/inbox/inboxStore.js';
import { interpretPayload } from '../../src/inbox/interpret.js';
import { compileVocabulary } from '../../src/inbox/vocabulary.js';
import type { OperationsStore } from '../../src/operations/storeSeam.js';
import type { PgDatabase } from '../../src/postgres/open.js';
import { PgOperationsStore } from '../../src/postgres/operationsStore.js';
import { postgresScriptStore } from '../../src/postgres/scripts.js';
import { useStateChangeSink } from '../../src/sqlite/changes.js';
import { sqliteInboxStore } from '../../src/sqlite/inboxStore.js';
import { openDatabase } from '../../src/sqlite/open.js';
import { SqliteOperationsStore } from '../../src/sqlite/operationsStore.js';
import { deliveriesSink } from '../../src/subscribers/deliverySinks.js';
import type { Subscriber } from '../../src/subscribers/subscribers.js';
import { tempDir } from '../helpers/context.js';

/**
 * The inbox store and the operations store over one database, SQLite (a temp file) or PostgreSQL,
 * with readers of what they wrote in dialect-neutral SQL (quoted identifiers read on both).
 */

export const ME = 'replica-me';
export const T0 = '2026-03-01T12:00:00.000Z';
export const T1 = '2026-03-01T12:01:00.000Z';
export const T2 = '2026-03-01T12:02:00.000Z';
const LEASE = '2026-03-01T12:30:00.000Z';

export const SUBSCRIBERS: Subscriber[] = [
  {
    key: 'app',
    url: 'http://127.0.0.1:1/hook',
    secret: 'whsec_x',
    events: ['operation.accepted', 'operation.approved', 'operation.rejected'],
  },
];

/** The default webhook configuration: where fields are read, and the decision vocabulary. */
export const WEBHOOK_CONFIG = loadConfig({ env: { VCU_SYNC_DB: '/nonexistent/unused.db' } }).webhook;
export const VOCABULARY = compileVocabulary(WEBHOOK_CONFIG.decisions);

export interface InboxHarness {
  inbox: InboxStore;
  ops: OperationsStore;
  /** Events as `webhook_id outcome [reused] -> ref of the row it matched (or -)`, by id. */
  events(): Promise<string[]>;
  /** Each event's reason and body, by id. */
  texts(): Promise<Array<{ reason: string | null; body: string }>>;
  /** The outbox as `ref state`, by id. */
  rows(): Promise<string[]>;
  feed(): Promise<string[]>;
  deliveries(): Promise<string[]>;
  /** Rows of one table. */
  count(table: string): Promise<number>;
  reset(): Promise<void>;
  close(): Promise<void>;
}

const EVENTS = `SELECT e.webhook_id || ' ' || e.outcome || CASE WHEN e.id_reused THEN ' reused' ELSE '' END
    || ' -> ' || COALESCE((SELECT o."marketplaceTransactionRef" FROM outbox o WHERE o.id = e.outbox_id), '-') AS v
  FROM webhook_events e ORDER BY e.id`;
const ROWS = `SELECT "marketplaceTransactionRef" || ' ' || state AS v FROM outbox ORDER BY id`;
const FEED = "SELECT record_id || ' ' || kind AS v FROM changes WHERE resource = 'operations' ORDER BY seq";
const DELIVERIES = "SELECT ref || ' ' || event_type AS v FROM deliveries ORDER BY id";
const TEXTS = 'SELECT reason, body FROM webhook_events ORDER BY id';
const TABLES = [
  'webhook_events',
  'webhook_rejections',
  'custody_ids',
  'outbox_attempts',
  'outbox',
  'changes',
  'deliveries',
];

export function sqliteInboxHarness(): InboxHarness {
  const { dir, cleanup } = tempDir();
  const database = openDatabase(path.join(dir, 'inbox.db'));
  const { sqlite } = database;
  useStateChangeSink(sqlite, deliveriesSink(SUBSCRIBERS));
  const values = async (sql: string) => (sqlite.prepare(sql).all() as Array<{ v: string }>).map((r) => r.v);
  return {
    inbox: sqliteInboxStore(sqlite),
    ops: new SqliteOperationsStore(sqlite),
    events: () => values(EVENTS),
    texts: async () => sqlite.prepare(TEXTS).all() as Array<{ reason: string | null; body: string }>,
    rows: () => values(ROWS),
    feed: () => values(FEED),
    deliveries: () => values(DELIVERIES),
    count: async (table) => (sqlite.prepare(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n,
    reset: async () => {
      for (const table of TABLES) sqlite.exec(`DELETE FROM ${table}`);
    },
    close: async () => {
      database.close();
      cleanup();
    },
  };
}

/** One replica on PostgreSQL: its own pool (a second harness over another pool is another replica). */
export function postgresInboxHarness(db: PgDatabase): InboxHarness {
  const values = async (sql: string) => (await db.pool.query<{ v: string }>(sql)).rows.map((r) => r.v);
  return {
    inbox: new InboxStore(postgresScriptStore(db.pool), { onStateChange: deliveriesSink(SUBSCRIBERS) }),
    ops: new PgOperationsStore(db.pool, { onStateChange: deliveriesSink(SUBSCRIBERS) }),
    events: () => values(EVENTS),
    texts: async () => (await db.pool.query<{ reason: string | null; body: string }>(TEXTS)).rows,
    rows: () => values(ROWS),
    feed: () => values(FEED),
    deliveries: () => values(DELIVERIES),
    count: async (table) => Number((await db.pool.query(`SELECT count(*) AS n FROM ${table}`)).rows[0].n),
    reset: async () => {
      await db.pool.query(`TRUNCATE ${TABLES.join(', ')} RESTART IDENTITY CASCADE`);
    },
    close: async () => {},
  };
}

/** A verified webhook as the handler hands it to the store. */
export function webhook(id: string, payload: Record<string, unknown>, receivedAt = T1): ReceivedWebhook {
  return {
    webhookId: id,
    receivedAt,
    body: payload,
    bodyHash: bodyHash(JSON.stringify(payload)),
    meaning: interpretPayload(payload, WEBHOOK_CONFIG.fields, VOCABULARY),
  };
}

/** A decision payload shaped like the simulator's. */
export function decision(ref: string, status: string, reason?: string): Record<string, unknown> {
  return {
    type: 'transaction.decided',
    data: { marketplaceTransactionRef: ref, status, ...(reason ? { reason } : {}) },
  };
}

/** Queues `ref` (its body names a user) through the operations store. */
export async function queue(ops: OperationsStore, ref: string, at = T0): Promise<void> {
  await ops.insert(
    [
      {
        ref,
        operationType: 'Transfer',
        orderKey: null,
        body: JSON.stringify({ marketplaceTransactionRef: ref, originUserName: 'Alice Liddell' }),
        hash: `h-${ref}`,
      },
    ],
    at,
  );
}

/** Queues, claims and settles `ref` as accepted by the operator; returns its id. */
export async function accept(ops: OperationsStore, ref: string, owner = ME): Promise<number> {
  await queue(ops, ref);
  const claimed = await ops.claim({ owner, now: T1, leaseUntil: LEASE, limit: 100 });
  const row = claimed.find((r) => r.marketplaceTransactionRef === ref);
  if (!row) throw new Error(`${ref} was not claimed`);
  const settled = await ops.settle(
    { id: row.id, ref, owner, now: T1 },
    { startedAt: T1, durationMs: 5, statusCode: 202, error: null },
    { to: 'accepted', response: '{}', status: 202 },
  );
  if (!settled) throw new Error(`${ref} was not settled`);
  return row.id;
}
