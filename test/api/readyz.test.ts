import { spawn } from 'node:child_process';
import { statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { createApiComponent } from '../../src/api/server.js';
import { createWebhookComponent } from '../../src/inbox/listener.js';
import { pauseRecord } from '../../src/outbox/pause.js';
import { DEFAULT_WEBHOOK_SECRET } from '../../src/simulator/index.js';
import { commitQueueFor } from '../../src/sqlite/commitQueue.js';
import { sqliteInboxStore } from '../../src/sqlite/inboxStore.js';
import { testContext } from '../helpers/context.js';
import { sqliteApiComponent } from '../helpers/sqliteApi.js';

/**
 * /readyz against the real listeners on a real SQLite file: 200 only when the database takes
 * writes, its schema is current, both listeners are up and sending is not paused; 503 with every
 * reason otherwise. /healthz (liveness) answers 200 throughout.
 */
type Ctx = ReturnType<typeof testContext>;
let ctx: Ctx;
let api: ReturnType<typeof createApiComponent>;
let webhook: ReturnType<typeof createWebhookComponent>;
let base: string;

async function get(path: string): Promise<{ status: number; body: { ready?: boolean; reasons?: string[] } }> {
  const res = await fetch(`${base}${path}`);
  return { status: res.status, body: (await res.json()) as { ready?: boolean; reasons?: string[] } };
}

beforeEach(async () => {
  ctx = testContext({
    overrides: {
      'api.listen': '127.0.0.1:0',
      'webhook.listen': '127.0.0.1:0',
      'api.token': 'readyz-token-0123456789',
      'webhook.secrets': [DEFAULT_WEBHOOK_SECRET],
    },
  });
  // As the daemon wires them: /readyz reads both listeners.
  const listeners = new Map<string, string>();
  api = sqliteApiComponent(ctx, { listeners });
  webhook = createWebhookComponent(ctx, { store: sqliteInboxStore(ctx.database.sqlite), listeners });
  await api.start();
  await webhook.start();
  base = `http://127.0.0.1:${api.address()!.port}`;
});
afterEach(async () => {
  await webhook.stop();
  await api.stop();
  ctx.dispose();
});

describe('GET /readyz', () => {
  it('answers 200 without a token when all is well', async () => {
    expect(await get('/readyz')).toEqual({ status: 200, body: { ready: true, reasons: [] } });
  });

  it('503 while the webhook listener is down, 200 again once it is back', async () => {
    await webhook.stop();
    const down = await get('/readyz');
    expect(down.status).toBe(503);
    expect(down.body.reasons).toEqual(['webhook-listener not listening']);
    expect((await get('/healthz')).status).toBe(200);
    await webhook.start();
    expect((await get('/readyz')).status).toBe(200);
  });

  it('503 while sending is paused by the operator refusing our key', async () => {
    await pauseRecord(commitQueueFor(ctx.database.sqlite)).write(
      { reason: 'operator answered 401', status: 401, since: new Date().toISOString() },
      new Date().toISOString(),
    );
    const paused = await get('/readyz');
    expect(paused.status).toBe(503);
    expect(paused.body.reasons).toEqual(['sending paused: operator answered 401']);
    await pauseRecord(commitQueueFor(ctx.database.sqlite)).clear();
    expect((await get('/readyz')).status).toBe(200);
  });

  it('503 when the schema is behind this build (a migration not applied)', async () => {
    // drizzle keeps one row per applied migration (its id column is null in SQLite: key by time).
    const last = ctx.database.sqlite
      .prepare('SELECT max(created_at) FROM __drizzle_migrations')
      .pluck()
      .get();
    ctx.database.sqlite.prepare('DELETE FROM __drizzle_migrations WHERE created_at = ?').run(last);
    const behind = await get('/readyz');
    expect(behind.status).toBe(503);
    expect(behind.body.reasons).toEqual(['database schema behind: 1 migration(s) not applied']);
  });

  it('503 at once while another process holds the write lock; liveness keeps answering', async () => {
    // A real second process holds BEGIN IMMEDIATE until told to let go.
    const holder = spawn(
      process.execPath,
      [
        '-e',
        `const D=require(${JSON.stringify(createRequire(import.meta.url).resolve('better-sqlite3'))});const d=new D(${JSON.stringify(ctx.config.database.path)});d.exec('BEGIN IMMEDIATE');process.stdout.write('locked\\n');process.stdin.once('data',()=>{d.exec('ROLLBACK');d.close();process.exit(0)});`,
      ],
      { stdio: ['pipe', 'pipe', 'inherit'] },
    );
    try {
      await new Promise<void>((resolve) => holder.stdout!.once('data', () => resolve()));
      const locked = await get('/readyz');
      expect(locked.status).toBe(503);
      expect(locked.body.reasons).toHaveLength(1);
      expect(locked.body.reasons![0]).toBe(
        'database not writable: database-locked (SQLITE_BUSY: database is locked)',
      );
      expect((await get('/healthz')).status).toBe(200);
    } finally {
      holder.stdin!.write('go\n');
      await new Promise((resolve) => holder.once('exit', resolve));
    }
    expect((await get('/readyz')).status).toBe(200);
  });

  it('writes nothing while the database is healthy: the WAL does not grow across probes', async () => {
    const wal = `${ctx.config.database.path}-wal`;
    expect((await get('/readyz')).status).toBe(200);
    const before = statSync(wal).size;
    const changes = ctx.database.sqlite.prepare('SELECT total_changes()').pluck();
    const changesBefore = changes.get();
    for (let i = 0; i < 20; i++) expect((await get('/readyz')).status).toBe(200);
    expect(statSync(wal).size).toBe(before);
    expect(changes.get()).toBe(changesBefore);
  });

  it('names every reason at once', async () => {
    await webhook.stop();
    await pauseRecord(commitQueueFor(ctx.database.sqlite)).write(
      { reason: 'operator answered 403', status: 403, since: new Date().toISOString() },
      new Date().toISOString(),
    );
    const both = await get('/readyz');
    expect(both.status).toBe(503);
    expect(both.body.reasons).toEqual([
      'webhook-listener not listening',
      'sending paused: operator answered 403',
    ]);
    await webhook.start();
  });
});
