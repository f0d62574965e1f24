import path from 'node:path';
import { type Config, loadConfig } from '../../src/config/config.js';
import type { readHealth } from '../../src/health/readHealth.js';
import type { HealthReads } from '../../src/health/snapshot.js';
import type { MirrorBackend } from '../../src/mirror/backend.js';
import { pgHealthReads } from '../../src/postgres/health.js';
import { pgBackend } from '../../src/postgres/mirror.js';
import type { PgDatabase } from '../../src/postgres/open.js';
import { postgresScriptStore } from '../../src/postgres/scripts.js';
import { commitQueueFor } from '../../src/sqlite/commitQueue.js';
import { sqliteHealthReads } from '../../src/sqlite/health.js';
import { sqliteBackend } from '../../src/sqlite/mirror.js';
import { openDatabase } from '../../src/sqlite/open.js';
import type { ScriptStore } from '../../src/store/script.js';
import { tempDir } from '../helpers/context.js';

/**
 * The health snapshot's stores side by side: a SQLite file and a PostgreSQL database, each filled
 * with the same situation through the same dialect-neutral statements (`?` placeholders, quoted
 * camelCase columns), read through their {@link HealthReads}.
 */

/** The moment every case is judged at. */
export const NOW = Date.parse('2026-03-02T12:00:00.000Z');
/** `minutes` before NOW, as SQLite stores times. */
export const ago = (minutes: number) => new Date(NOW - minutes * 60_000).toISOString();

/** The default configuration (schedules, thresholds), SQLite's path never opened. */
export const CONFIG: Config = loadConfig({ env: { VCU_SYNC_DB: '/nonexistent/unused.db' } });

/** Runs one statement with `?` placeholders (booleans as the dialect stores them). */
export type Exec = (sql: string, params?: unknown[]) => Promise<void>;

export interface HealthStore {
  reads: HealthReads;
  exec: Exec;
  /** The store's script store, for a reconciliation pass to record its findings. */
  scripts: ScriptStore;
  /** The mirror on this store, for a sync against the simulator to write its rows. */
  backend: MirrorBackend;
  close(): Promise<void>;
}

/** What readHealth answers. */
export type Health = Awaited<ReturnType<typeof readHealth>>;

export function sqliteHealthStore(): HealthStore {
  const { dir, cleanup } = tempDir('vcu-sync-health-');
  const database = openDatabase(path.join(dir, 'health.db'));
  return {
    reads: sqliteHealthReads(database.sqlite),
    scripts: commitQueueFor(database.sqlite),
    backend: sqliteBackend(database.sqlite),
    exec: async (sql, params = []) => {
      database.sqlite.prepare(sql).run(...params.map((p) => (typeof p === 'boolean' ? Number(p) : p)));
    },
    close: async () => {
      database.close();
      cleanup();
    },
  };
}

const TABLES =
  'sync_runs, sync_checkpoints, quarantine, outbox, outbox_attempts, webhook_events, webhook_rejections, deliveries, daemon_state, replicas, changes, schema_fields, schema_changes, sync_seen, projects, reconciliation_ledger, reconciliation_findings';

/** PostgreSQL's, emptied first (the database is shared by the cases of a file). */
export async function pgHealthStore(store: PgDatabase): Promise<HealthStore> {
  await store.pool.query(`TRUNCATE ${TABLES} RESTART IDENTITY CASCADE`);
  return {
    reads: pgHealthReads(store.pool),
    scripts: postgresScriptStore(store.pool),
    backend: pgBackend(store.pool),
    exec: async (sql, params = []) => {
      let n = 0;
      await store.pool.query(
        sql.replace(/\?/g, () => `$${++n}`),
        params,
      );
    },
    close: async () => {},
  };
}

export async function syncRun(
  exec: Exec,
  resource: string,
  status: string,
  startedMinutesAgo: number,
  error: string | null = null,
): Promise<void> {
  await exec(
    `INSERT INTO sync_runs (resource, mode, trigger, started_at, finished_at, status, fetched, inserted, updated, removed, quarantined, error, pid)
     VALUES (?, 'incremental', 'schedule', ?, ?, ?, 10, 2, 3, 1, 0, ?, 4242)`,
    [
      resource,
      ago(startedMinutesAgo),
      status === 'running' ? null : ago(startedMinutesAgo - 1),
      status,
      error,
    ],
  );
}

/** An outbox row in `state`, its times `minutes` ago (accepted, decided and finished where its state has them). */
export async function operation(
  exec: Exec,
  ref: string,
  state: string,
  minutes: number,
  extra: { error?: string; reason?: string; owner?: string; type?: string; body?: string } = {},
): Promise<void> {
  const accepted = ['accepted', 'approved', 'rejected'].includes(state) ? ago(minutes) : null;
  const decided = ['approved', 'rejected'].includes(state) ? ago(minutes - 1) : null;
  const finished = ['approved', 'rejected', 'failed', 'cancelled'].includes(state) ? ago(minutes - 1) : null;
  await exec(
    `INSERT INTO outbox ("marketplaceTransactionRef", "operationType", order_key, body, body_hash, state, attempts,
       next_attempt_at, lease_owner, lease_until, last_error, decision_reason, created_at, updated_at, accepted_at, decided_at, finished_at)
     VALUES (?, ?, ?, ?, 'h', ?, 1, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    [
      ref,
      extra.type ?? 'Transfer',
      `key-${ref}`,
      extra.body ?? '{}',
      state,
      ago(minutes),
      extra.owner ?? null,
      extra.owner ? ago(-30) : null,
      extra.error ?? null,
      extra.reason ?? null,
      ago(minutes),
      ago(minutes - 1),
      accepted,
      decided,
      finished,
    ],
  );
}

export async function webhookEvent(
  exec: Exec,
  id: string,
  outcome: string,
  minutes: number,
  extra: { reused?: boolean; type?: string; status?: string } = {},
): Promise<void> {
  await exec(
    `INSERT INTO webhook_events (webhook_id, body_hash, id_reused, received_at, event_type, event_status,
       "marketplaceTransactionRef", decision, body, outcome)
     VALUES (?, ?, ?, ?, ?, ?, ?, NULL, '{}', ?)`,
    [
      id,
      `hash-${id}`,
      extra.reused ?? false,
      ago(minutes),
      extra.type ?? null,
      extra.status ?? null,
      `ref-${id}`,
      outcome,
    ],
  );
}

export async function delivery(
  exec: Exec,
  subscriber: string,
  id: string,
  state: string,
  minutes: number,
  lastError: string | null = null,
): Promise<void> {
  await exec(
    `INSERT INTO deliveries (subscriber, event_type, ref, webhook_id, body, state, attempts, next_attempt_at, last_error, created_at, updated_at)
     VALUES (?, 'operation.accepted', ?, ?, '{}', ?, 1, ?, ?, ?, ?)`,
    [subscriber, `ref-${id}`, `wh-${id}`, state, ago(minutes), lastError, ago(minutes), ago(minutes)],
  );
}

/** A situation: what it writes, and the problem codes the rules must find in it. */
export interface HealthCase {
  name: string;
  seed(exec: Exec): Promise<void>;
  codes: string[];
  /** Further assertions on what was read (the problem's words, the figures). */
  check?(health: Health): void;
}

export const HEALTH_CASES: HealthCase[] = [
  {
    name: 'a fresh database: nothing synced yet',
    seed: async () => {},
    codes: ['sync-never', 'sync-never', 'sync-never', 'sync-never'],
  },
  {
    name: 'a healthy day: every resource synced a minute ago, decisions arriving',
    seed: async (exec) => {
      for (const r of ['projects', 'issuances', 'units', 'custody']) await syncRun(exec, r, 'succeeded', 2);
      await exec(
        `INSERT INTO sync_checkpoints (resource, run_id, mode, next_offset, scan_started_at, state, updated_at)
         VALUES ('units', 3, 'incremental', 150, ?, '{"pageSize":50,"position":7}', ?)`,
        [ago(2), ago(2)],
      );
      await operation(exec, 'op-approved', 'approved', 30);
      await operation(exec, 'op-accepted', 'accepted', 20);
      await operation(exec, 'op-queued', 'queued', 1);
      await webhookEvent(exec, 'w1', 'applied', 29);
      await delivery(exec, 'app', 'd1', 'delivered', 28);
      await exec(`INSERT INTO daemon_state (key, value, updated_at) VALUES ('daemon', ?, ?)`, [
        JSON.stringify({ startedAt: ago(90), pid: 1, instance: 'a', version: '0' }),
        ago(90),
      ]);
    },
    codes: [],
  },
  {
    name: 'a worst day: every problem the data can show at once',
    seed: async (exec) => {
      await syncRun(exec, 'projects', 'failed', 5, 'operator answered 401 Unauthorized');
      await syncRun(exec, 'issuances', 'succeeded', 600);
      await syncRun(exec, 'issuances', 'failed', 3, 'socket hang up');
      await syncRun(exec, 'units', 'succeeded', 3);
      await syncRun(exec, 'custody', 'succeeded', 4);
      await exec(`INSERT INTO daemon_state (key, value, updated_at) VALUES ('outbox.paused', ?, ?)`, [
        JSON.stringify({ reason: 'operator answered 401', status: 401, since: ago(12) }),
        ago(12),
      ]);
      await operation(exec, 'op-failed-1', 'failed', 50, { error: 'HTTP 422: bad body' });
      await operation(exec, 'op-failed-2', 'failed', 40, { error: 'HTTP 400: unknown unit' });
      await operation(exec, 'op-rejected-1', 'rejected', 300, { reason: 'insufficient units' });
      await operation(exec, 'op-rejected-2', 'rejected', 200, { reason: 'retired already' });
      await operation(exec, 'op-old-accepted', 'accepted', 26 * 60);
      await operation(exec, 'op-accepted', 'accepted', 60);
      await operation(exec, 'op-queued-old', 'queued', 400);
      await operation(exec, 'op-sending', 'sending', 30, { owner: 'replica-x' });
      await operation(exec, 'op-cancelled', 'cancelled', 100);
      await exec(
        `INSERT INTO quarantine (resource, record_id, run_id, reason, raw, at) VALUES ('units', 'u-9', 1, 'not JSON', 'x{', ?)`,
        [ago(5)],
      );
      await webhookEvent(exec, 'w-conflict', 'conflict', 10);
      await webhookEvent(exec, 'w-pending', 'pending', 50 * 60);
      await webhookEvent(exec, 'w-undecided', 'undecided', 8, {
        type: 'operation.updated',
        status: 'on_hold',
      });
      await webhookEvent(exec, 'w-reused', 'applied', 7, { reused: true });
      await exec(`INSERT INTO webhook_rejections (at, status, reason) VALUES (?, 401, 'bad signature')`, [
        ago(6),
      ]);
      await exec(`INSERT INTO webhook_rejections (at, status, reason) VALUES (?, 401, 'stale timestamp')`, [
        ago(4),
      ]);
      await delivery(exec, 'app', 'd1', 'dead', 300, 'HTTP 500');
      await delivery(exec, 'app', 'd2', 'pending', 45, 'connection refused');
      await delivery(exec, 'billing', 'd3', 'pending', 2);
    },
    codes: [
      'operator-auth',
      'sending-paused',
      'queue-old',
      'decision-conflict',
      'sync-failed',
      'sync-stale',
      'operations-failed',
      'decision-overdue',
      'operations-rejected',
      'webhook-verification-failed',
      'webhook-unmatched',
      'webhook-undecided',
      'webhook-id-reused',
      'records-quarantined',
      'subscriber-dead-letter',
      'subscriber-failing',
    ],
  },
];
