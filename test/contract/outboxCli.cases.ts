import { readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/sqlite/open.js';
import { daemonEnv, daemonToml, spawnCli, writeToml } from '../ops/child.js';
import { PERSONAL, tokenization, transfer } from '../outbox/fixtures.js';

/**
 * `vcu-sync enqueue` and `vcu-sync outbox` (every action) as child processes, the same commands on
 * SQLite (outboxCli.sqlite.test.ts) and PostgreSQL (outboxCli.pg.test.ts, with database.url set):
 * exit codes and output, times aside (each process reads its own clock), and `outbox` on a database
 * the daemon never ran on refused. PostgreSQL's half runs each command on SQLite too and must print
 * the same; no SQLite file appears on its side and the password never shows.
 */

export interface Run {
  code: number | null;
  /** stdout, times replaced by `<time>`. */
  stdout: string;
  /** stderr without pino's JSON lines, times replaced. */
  said: string;
}

const TIME = /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z/g;

/** One store as the CLI runs on it. */
export interface CliSide {
  /** The environment of its children (database.path, and database.url on PostgreSQL). */
  env: NodeJS.ProcessEnv;
  /** Checks every run on this store must pass (PostgreSQL's: no password shown, no SQLite file). */
  afterRun?(output: string): void;
  /** Runs literal SQL on the store (what the dispatcher would have done to a row). */
  exec(sql: string): Promise<void>;
  /** What `outbox` says on this store before the daemon ever ran. */
  neverRan: RegExp;
  /** A folder the refusal must leave empty (SQLite's database.path). */
  untouched?: string;
}

/** The store under test, and where the commands' input files go. */
export interface CliUnderTest {
  side: CliSide;
  inputs: string;
  /** Another store every command also runs on, which must answer the same. */
  reference?: CliSide;
  close(): Promise<void>;
}

/** The environment of a side whose database.path is `dir` (`url`: PostgreSQL's), for `config`. */
export const cliEnv = (dir: string, config: string, extra: NodeJS.ProcessEnv = {}) =>
  daemonEnv(dir, 'http://127.0.0.1:9', config, extra);

/** The daemon's configuration file for both sides, written into `dir`. */
export const cliConfig = (dir: string) => writeToml(dir, daemonToml({ onStartup: false }));

/** SQLite's side: database.path `dir`, its file opened for the moves a command cannot make. */
export function sqliteCliSide(dir: string, config: string): CliSide {
  return {
    env: cliEnv(dir, config),
    exec: async (sql: string) => {
      const database = openDatabase(path.join(dir, 'vcu.db'), { migrate: false });
      try {
        database.sqlite.exec(sql);
      } finally {
        database.close();
      }
    },
    neverRan: /vcu\.db does not exist: the daemon has never run with this configuration/,
    untouched: dir,
  };
}

/** Registers the cases on the store `name`; `open` gives the suite its store, the daemon never run on it. */
export function outboxCliCases(name: string, open: () => Promise<CliUnderTest>): void {
  describe(`vcu-sync enqueue and outbox on ${name}`, () => {
    let store: CliUnderTest;
    beforeAll(async () => {
      store = await open();
    });
    afterAll(async () => {
      await store?.close();
    });
    /** The reference (if any) first, then the store under test. */
    const sides = () => (store.reference ? [store.reference, store.side] : [store.side]);

    /** One child on `side`, with the checks every run on it must pass. */
    async function run(side: CliSide, args: string[]): Promise<Run> {
      const c = spawnCli(args, side.env);
      let stdout = '';
      let stderr = '';
      c.child.stdout!.on('data', (d: Buffer) => {
        stdout += String(d);
      });
      c.child.stderr!.on('data', (d: Buffer) => {
        stderr += String(d);
      });
      const code = await c.exited;
      side.afterRun?.(c.output());
      const said = stderr
        .split('\n')
        .filter((l) => l !== '' && !l.startsWith('{"'))
        .join('\n');
      return { code, stdout: stdout.replace(TIME, '<time>'), said: said.replace(TIME, '<time>') };
    }

    /** The same command on each side at once: the store under test's run, after checking it is the reference's. */
    async function both(args: string[]): Promise<Run> {
      const runs = await Promise.all(sides().map((side) => run(side, args)));
      if (runs.length > 1) expect(runs[1], args.join(' ')).toEqual(runs[0]);
      return runs.at(-1)!;
    }

    /** A file in the inputs folder holding `value` as JSON (or `text` as is). */
    function input(name: string, value: unknown): string {
      const file = path.join(store.inputs, name);
      writeFileSync(file, typeof value === 'string' ? value : JSON.stringify(value));
      return file;
    }

    /** Literal SQL on each side's store. */
    async function onEachStore(sql: string): Promise<void> {
      for (const side of sides()) await side.exec(sql);
    }

    it('outbox before anything was queued: refused as a missing database is (exit 1), nothing created', async () => {
      const runs = await Promise.all(sides().map((side) => run(side, ['outbox', 'list'])));
      for (const [i, side] of sides().entries()) {
        expect(runs[i]!.code).toBe(1);
        expect(runs[i]!.said).toMatch(side.neverRan);
        if (side.untouched) expect(readdirSync(side.untouched)).toEqual([]);
      }
    });

    it('enqueue: 0 queued (the entry printed, masked), 0 again, 1 another body, 65 invalid or not JSON', async () => {
      const op = input('op-1.json', transfer('op-1', { unitId: 701 }));
      const first = await both(['enqueue', op]);
      expect(first.code).toBe(0);
      const entry = JSON.parse(first.stdout) as Record<string, unknown>;
      expect(entry).toMatchObject({ id: 1, marketplaceTransactionRef: 'op-1', state: 'queued', attempts: 0 });
      for (const v of Object.values(PERSONAL)) expect(first.stdout).not.toContain(v);

      expect(await both(['enqueue', op])).toEqual(first);

      const other = await both([
        'enqueue',
        input('op-1b.json', transfer('op-1', { unitId: 701, transactionAmount: 3 })),
      ]);
      expect(other.code).toBe(1);
      expect(other.said).toBe(
        'vcu-sync: marketplaceTransactionRef op-1 is already queued with a different body; use a new ref for a new operation',
      );

      const bad = await both([
        'enqueue',
        input('bad.json', tokenization('bad-1', { transactionAmount: -1, extraField: 1 })),
      ]);
      expect(bad.code).toBe(65);
      expect(bad.said).toMatch(
        /notification is invalid \(\d+ problems\)\n {2}transactionAmount: must be positive/,
      );
      const notJson = await both(['enqueue', input('junk.json', '{not json')]);
      expect(notJson.code).toBe(65);
      expect(notJson.said).toMatch(/junk\.json is not valid JSON$/);

      const second = await both(['enqueue', input('op-2.json', transfer('op-2', { unitId: 702 }))]);
      expect(second.code).toBe(0);
    });

    it('outbox list (table, JSON, by state) and show, the same on both', async () => {
      const table = await both(['outbox', 'list']);
      expect(table.code).toBe(0);
      expect(table.stdout).toMatch(/op-1\s+Transfer\s+queued/);
      expect(table.stdout).toMatch(/op-2\s+Transfer\s+queued/);
      const listed = await both(['outbox', 'list', '--json', '--state', 'queued']);
      expect(listed.code).toBe(0);
      const page = JSON.parse(listed.stdout) as { items: Array<{ marketplaceTransactionRef: string }> };
      expect(page.items.map((i) => i.marketplaceTransactionRef)).toEqual(['op-1', 'op-2']);
      expect((await both(['outbox', 'list', '--json', '--state', 'failed'])).stdout).toBe(
        '{\n  "items": [],\n  "nextCursor": null\n}\n',
      );

      const shown = await both(['outbox', 'show', 'op-1']);
      expect(shown.code).toBe(0);
      expect(JSON.parse(shown.stdout)).toMatchObject({ marketplaceTransactionRef: 'op-1', attempt_log: [] });
      for (const v of Object.values(PERSONAL)) expect(shown.stdout).not.toContain(v);
    });

    it('outbox retry and cancel with their exit codes: 0 done, 1 refused, 3 no such ref, 64 usage', async () => {
      const expedited = await both(['outbox', 'retry', 'op-1']);
      expect(expedited.code).toBe(0);
      expect(JSON.parse(expedited.stdout)).toMatchObject({ state: 'queued' });

      const cancelled = await both(['outbox', 'cancel', 'op-1']);
      expect(cancelled.code).toBe(0);
      expect(JSON.parse(cancelled.stdout)).toMatchObject({ state: 'cancelled' });
      const refused = await both(['outbox', 'retry', 'op-1']);
      expect(refused.code).toBe(1);
      expect(refused.said).toMatch(/cannot retry op-1: it is cancelled/);

      // op-2 failed after an attempt, as the dispatcher would leave it: retry queues it again.
      await onEachStore(
        `UPDATE outbox SET state = 'failed', attempts = 1, last_status = 500, last_error = 'operator answered 500',
         finished_at = updated_at WHERE "marketplaceTransactionRef" = 'op-2';
       INSERT INTO outbox_attempts (outbox_id, started_at, duration_ms, status_code, error)
         VALUES ((SELECT id FROM outbox WHERE "marketplaceTransactionRef" = 'op-2'), '2026-03-01T12:00:00.000Z', 42, 500, 'HTTP 500');`,
      );
      const failed = await both(['outbox', 'show', 'op-2']);
      expect(JSON.parse(failed.stdout)).toMatchObject({
        state: 'failed',
        attempt_log: [{ duration_ms: 42, status_code: 500, error: 'HTTP 500' }],
        // The CLI prints the API's JSON: the camelCase twins too (docs/api.md "Field names").
        attemptLog: [{ durationMs: 42, statusCode: 500, error: 'HTTP 500' }],
        lastError: 'operator answered 500',
        last_error: 'operator answered 500',
      });
      const retried = await both(['outbox', 'retry', 'op-2']);
      expect(retried.code).toBe(0);
      expect(JSON.parse(retried.stdout)).toMatchObject({ state: 'queued', attempts: 0, finished_at: null });

      // Accepted by the operator: too late to cancel.
      await onEachStore(
        `UPDATE outbox SET state = 'accepted', accepted_at = updated_at WHERE "marketplaceTransactionRef" = 'op-2'`,
      );
      const late = await both(['outbox', 'cancel', 'op-2']);
      expect(late.code).toBe(1);
      expect(late.said).toMatch(/cannot cancel op-2: it is accepted; the operator has already accepted it/);

      // Independent of each other and of the rows: run together (each pair is two process starts).
      const [noShow, noCancel, usage, badState] = await Promise.all([
        both(['outbox', 'show', 'nope']),
        both(['outbox', 'cancel', 'nope']),
        both(['outbox', 'show']),
        both(['outbox', 'list', '--state', 'bogus']),
      ]);
      expect([noShow.code, noCancel.code, usage.code, badState.code]).toEqual([3, 3, 64, 64]);
    });
  });
}
