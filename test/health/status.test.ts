import { hostname } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { VERSION } from '../../src/health/identity.js';
import { openDatabase } from '../../src/sqlite/open.js';
import { writeDaemonRecord } from '../../src/sqlite/ownership.js';
import { cliArgs, runNode } from '../helpers/cli.js';
import { tempDir } from '../helpers/context.js';

/** Runs `vcu-sync status` against a database file built by the test. */
const status = (db: string, json = false) =>
  runNode(cliArgs(['status', ...(json ? ['--json'] : [])]), { VCU_SYNC_DB: db });

const ago = (ms: number) => new Date(Date.now() - ms).toISOString();
const MIN = 60_000;

function seedHealthy(db: string) {
  const { sqlite, close } = openDatabase(db);
  const run = sqlite.prepare(
    `INSERT INTO sync_runs (resource, mode, trigger, started_at, finished_at, status, fetched) VALUES (?, 'full', 'schedule', ?, ?, ?, 10)`,
  );
  for (const r of ['projects', 'issuances', 'units', 'custody'])
    run.run(r, ago(2 * MIN), ago(MIN), 'succeeded');
  return { sqlite, close };
}

function addOutboxRow(
  sqlite: ReturnType<typeof openDatabase>['sqlite'],
  ref: string,
  state: string,
  fields: Record<string, string> = {},
) {
  sqlite
    .prepare(
      `INSERT INTO outbox (marketplaceTransactionRef, operationType, body, body_hash, state, next_attempt_at, created_at, updated_at, accepted_at, decided_at, decision_reason, last_error)
       VALUES (@ref, 'Transfer', '{}', 'h', @state, @now, @created, @now, @accepted, @decided, @reason, @error)`,
    )
    .run({
      ref,
      state,
      now: ago(0),
      created: fields.created ?? ago(MIN),
      accepted: fields.accepted ?? null,
      decided: fields.decided ?? null,
      reason: fields.reason ?? null,
      error: fields.error ?? null,
    });
}

describe('vcu-sync status', () => {
  const cleanups: Array<() => void> = [];
  afterEach(() => {
    for (const c of cleanups.splice(0)) c();
  });
  const dbFile = () => {
    const t = tempDir();
    cleanups.push(t.cleanup);
    return path.join(t.dir, 'status.db');
  };

  it('exits 0 when every resource synced recently and nothing is wrong', () => {
    const db = dbFile();
    const { sqlite, close } = seedHealthy(db);
    addOutboxRow(sqlite, 'ok-1', 'approved', { accepted: ago(5 * MIN), decided: ago(4 * MIN) });
    close();
    const { code, stdout } = status(db);
    expect(code).toBe(0);
    expect(stdout).toMatch(/^vcu-sync OK/);
    expect(stdout).toMatch(/outbox: approved 1/);
  });

  it('exits 1 with the problem and what to do when an operation was rejected or failed', () => {
    const db = dbFile();
    const { sqlite, close } = seedHealthy(db);
    addOutboxRow(sqlite, 'rej-1', 'rejected', {
      accepted: ago(9 * MIN),
      decided: ago(8 * MIN),
      reason: 'units not in custody',
    });
    addOutboxRow(sqlite, 'fail-1', 'failed', { error: 'operator answered 422: bad amount' });
    close();
    const { code, stdout } = status(db);
    expect(code).toBe(1);
    expect(stdout).toMatch(/operations-rejected: 1 operation rejected .*rej-1: units not in custody/);
    expect(stdout).toMatch(/operations-failed: 1 operation failed/);
    expect(stdout).toMatch(/→ vcu-sync outbox list --state failed/);
  });

  it('exits 2 and lists the critical problem first when sending is paused by the operator refusing our key', () => {
    const db = dbFile();
    const { sqlite, close } = seedHealthy(db);
    addOutboxRow(sqlite, 'fail-2', 'failed', { error: 'x' });
    sqlite
      .prepare(`INSERT INTO daemon_state (key, value, updated_at) VALUES ('outbox.paused', ?, ?)`)
      .run(
        JSON.stringify({ reason: 'operator answered 401: invalid api key', since: ago(3 * MIN) }),
        ago(3 * MIN),
      );
    close();
    const { code, stdout } = status(db, true);
    expect(code).toBe(2);
    const health = JSON.parse(stdout);
    expect(health.status).toBe('critical');
    expect(health.problems[0]).toMatchObject({ severity: 'critical', code: 'sending-paused' });
    expect(health.problems.map((p: { code: string }) => p.code)).toContain('operations-failed');
  });

  it('warns about a resource whose last success is older than its schedule allows, and one that never synced', () => {
    const db = dbFile();
    const { sqlite, close } = openDatabase(db);
    sqlite
      .prepare(
        `INSERT INTO sync_runs (resource, mode, trigger, started_at, finished_at, status) VALUES ('units', 'incremental', 'schedule', ?, ?, 'succeeded')`,
      )
      .run(ago(4 * 60 * MIN), ago(4 * 60 * MIN));
    close();
    const { code, stdout } = status(db, true);
    expect(code).toBe(1);
    const codes = JSON.parse(stdout).problems.map(
      (p: { code: string; message: string }) => `${p.code} ${p.message}`,
    );
    expect(codes).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^sync-stale units last synced 4h ago/),
        expect.stringMatching(/^sync-never projects/),
      ]),
    );
  });

  it('decision-overdue: more accepted operations waiting than status.decision_warn_count, however young', () => {
    const db = dbFile();
    const { sqlite, close } = seedHealthy(db);
    for (let i = 0; i < 20; i++)
      addOutboxRow(sqlite, `acc-${i}`, 'accepted', { accepted: ago((10 + i) * MIN) });
    close();
    // 20 waiting is the default limit: not yet a problem.
    expect(status(db).code).toBe(0);
    const again = openDatabase(db);
    addOutboxRow(again.sqlite, 'acc-20', 'accepted', { accepted: ago(5 * MIN) });
    again.close();
    const { code, stdout } = status(db);
    expect(code).toBe(1);
    expect(stdout).toMatch(
      /decision-overdue: 21 accepted operations waiting for a decision \(more than 20; oldest 29m\)/,
    );
    expect(stdout).toMatch(/decisions: 21 awaiting \(oldest 29m\)/);
  });

  it('decision-overdue: one accepted operation older than status.decision_warn_hours', () => {
    const db = dbFile();
    const { sqlite, close } = seedHealthy(db);
    addOutboxRow(sqlite, 'acc-old', 'accepted', { accepted: ago(25 * 60 * MIN) });
    close();
    const { code, stdout } = status(db);
    expect(code).toBe(1);
    expect(stdout).toMatch(
      /decision-overdue: 1 accepted operation waiting for a decision \(1 of them for over 24h; oldest 25h\)/,
    );
  });

  it('says which vcu-sync it is: version, instance, operator, database, and the daemon uptime when one runs', () => {
    const db = dbFile();
    seedHealthy(db).close();
    const idle = status(db).stdout.split('\n')[1];
    expect(idle).toBe(
      `vcu-sync ${VERSION} on ${hostname()} (operator not configured, sqlite ${db}), daemon not running`,
    );
    const again = openDatabase(db);
    writeDaemonRecord(again.sqlite, { startedAt: ago(90 * MIN), pid: 1, instance: 'x', version: VERSION });
    again.close();
    const { stdout } = runNode(cliArgs(['status', '--json']), {
      VCU_SYNC_DB: db,
      VCU_SYNC_OPERATOR_URL: 'https://registry.example:8443/base',
    });
    const health = JSON.parse(stdout);
    expect(health.identity).toMatchObject({
      version: VERSION,
      instance: hostname(),
      operatorHost: 'registry.example:8443',
      database: { kind: 'sqlite', location: db },
    });
    expect(health.identity.uptimeSeconds).toBeGreaterThanOrEqual(90 * 60);
  });

  it('exits 2 when the database does not exist', () => {
    const { code, stdout } = status(dbFile());
    expect(code).toBe(2);
    expect(stdout).toMatch(/does not exist/);
  });
});
