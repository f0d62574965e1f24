import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sortsInByteOrder } from '../../src/api/mirrorQueries.js';
import { CSV_COLUMNS } from '../../src/commands/reconcileFormats.js';
import { readOpenCounts, readReconciliation } from '../../src/reconcile/reconciliationReads.js';
import type { ScriptStore } from '../../src/store/script.js';
import { type CliRun, tableLine, vcuSync } from '../shape/schemaCli.js';
import {
  BROKEN_UNIT,
  bookSettings,
  change,
  FORMULA_ID,
  logRetirement,
  OPEN_FINDINGS,
  SHEET_ORDER,
} from './reconciliationBook.js';

/**
 * `vcu-sync reconcile` as child processes, the same commands on SQLite (reconcileCli.sqlite.test.ts)
 * and PostgreSQL (reconcileCli.pg.test.ts, database.url set): the book of reconciliationBook.ts
 * written into the store, then reconciled and printed by the command in each format, the exit
 * codes, `--issuance`'s scope and the refusals. PostgreSQL's half runs each command on a SQLite
 * file holding the same book too, which must print the same, times aside.
 */

/** One store as the command runs on it. */
export interface CliSide {
  /** The environment of its children (database.path, and database.url on PostgreSQL). */
  env: NodeJS.ProcessEnv;
  /** The store the book is in, for the test's own reads and changes. */
  store: ScriptStore;
  /** Checks every run on this store must pass (PostgreSQL's: no password shown, no SQLite file). */
  afterRun?(run: CliRun): void;
  /** An environment whose database the daemon never ran on. */
  neverRan: NodeJS.ProcessEnv;
}

export interface ReconcileCliUnderTest {
  side: CliSide;
  /** Another store holding the same book, on which every command must print the same. */
  reference?: CliSide;
  close(): Promise<void>;
}

/** Times as JSON and CSV print them, and as the table does. */
const TIMES = /\d{4}-\d\d-\d\d(T| )\d\d:\d\d:\d\d(\.\d{3}Z)?/g;
const timeless = (run: CliRun): CliRun => ({ ...run, stdout: run.stdout.replace(TIMES, '<time>') });

/** Reads RFC 4180 CSV back (quoted cells with doubled quotes and line breaks; CRLF between records). */
export function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let cell = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i]!;
    if (quoted) {
      if (ch === '"' && text[i + 1] === '"') {
        cell += '"';
        i++;
      } else if (ch === '"') quoted = false;
      else cell += ch;
    } else if (ch === '"' && cell === '') quoted = true;
    else if (ch === ',') {
      row.push(cell);
      cell = '';
    } else if (ch === '\r' && text[i + 1] === '\n') {
      row.push(cell);
      rows.push(row);
      row = [];
      cell = '';
      i++;
    } else {
      expect(ch, `a bare line break or quote at ${i}`).not.toMatch(/["\r\n]/);
      cell += ch;
    }
  }
  expect(cell === '' && row.length === 0, 'the last record ends with CRLF').toBe(true);
  return rows;
}

/** Registers the cases on the store `name`; `open` writes the book into it (no pass run yet). */
export function reconcileCliCases(name: string, open: () => Promise<ReconcileCliUnderTest>): void {
  describe(`vcu-sync reconcile on ${name}`, () => {
    let under: ReconcileCliUnderTest;
    beforeAll(async () => {
      under = await open();
    });
    afterAll(async () => {
      await under?.close();
    });
    const sides = () => (under.reference ? [under.reference, under.side] : [under.side]);

    async function runOn(side: CliSide, args: string[], env = side.env): Promise<CliRun> {
      const run = await vcuSync(['reconcile', ...args], env);
      side.afterRun?.(run);
      return run;
    }
    /** The same command on each side at once: the store under test's run, after checking it prints what the reference does. */
    async function both(...args: string[]): Promise<CliRun> {
      const runs = await Promise.all(sides().map((side) => runOn(side, args)));
      if (runs.length > 1) expect(timeless(runs[1]!), args.join(' ')).toEqual(timeless(runs[0]!));
      return runs.at(-1)!;
    }

    it('reconciles and prints the open findings, then the balance sheets, as tables; exit 2 for the critical ones', async () => {
      const run = await both();
      expect(run.said).toBe('');
      expect(run.code).toBe(2);
      const [summary, findings, sheets, counts] = run.stdout.split('\n\n');
      expect(summary).toBe(
        `Reconciled every issuance: 21 operation(s), ${SHEET_ORDER.length} balance sheet(s); ${OPEN_FINDINGS.length} finding(s) opened, 0 resolved`,
      );
      expect(findings).toMatch(
        /^Open findings \(amounts in tonnes, times UTC\)\nSEVERITY +KIND +SUBJECT +ISSUANCE/,
      );
      const over = tableLine(findings!, 'critical', 'over-issuance')!;
      expect(over.slice(0, 7)).toEqual([
        'critical',
        'over-issuance',
        'issuance ISS-B',
        'ISS-B',
        '-',
        '20',
        '30',
      ]);
      expect(over[8]).toBe('issuance ISS-B: 30 t tokenized, beyond its amount of 20 t');
      expect(tableLine(findings!, 'critical', 'outstanding-negative')!.slice(5, 7)).toEqual(['0', '-3']);
      // A line break in an id reaches the terminal as U+FFFD, not as a new line.
      expect(findings).toContain('unit U-X\ufffd"1"');
      expect(findings!.split('\n')).toHaveLength(2 + OPEN_FINDINGS.length);
      expect(sheets).toMatch(/^Balance sheets \(tonnes/);
      expect(tableLine(sheets!, 'issuance', 'ISS-A')).toEqual([
        'issuance',
        'ISS-A',
        '-',
        '50',
        '0',
        '10',
        '0',
        '40',
        '100',
        'held',
        '1/10',
        '0',
      ]);
      expect(tableLine(sheets!, 'unit', 'U-A1')!.slice(0, 3)).toEqual(['unit', 'U-A1', 'ISS-A']);
      expect(tableLine(sheets!, 'issuance', 'ISS-D')![9]).toBe('never');
      expect(tableLine(sheets!, 'issuance', 'ISS-F')![11]).toBe('1');
      expect(counts).toBe('Open findings: 2 critical, 5 warning, 1 info\n');
      // Again: the same findings, none opened.
      expect((await both()).stdout).toContain('0 finding(s) opened, 0 resolved');
    });

    it('--format json prints what GET /v1/reconciliation answers, every page in one, next null', async () => {
      const run = await both('--format', 'json');
      expect(run.code).toBe(2);
      const printed = JSON.parse(run.stdout);
      const store = under.side.store;
      const byteOrder = (await sortsInByteOrder(store)) ? '' : ' COLLATE "C"';
      const page = await readReconciliation(
        (s) => store.read(s),
        { issuance: null, kind: null, severity: null, state: 'open', after: null, limit: 1000 },
        { statuses: bookSettings().reconcile.retire_match.statuses, byteOrder },
      );
      expect(printed).toEqual({ ...page, next: null });
      expect(printed.findings).toHaveLength(OPEN_FINDINGS.length);
      expect(printed.balances.map((s: { subject: string; id: string }) => `${s.subject} ${s.id}`)).toEqual(
        SHEET_ORDER,
      );
    });

    it('--format csv: one header, findings then sheets, RFC 4180 quoting, formulas defused, numbers as they are', async () => {
      const run = await both('--format', 'csv');
      expect(run.code).toBe(2);
      const rows = parseCsv(run.stdout);
      expect(rows[0]).toEqual([...CSV_COLUMNS]);
      const records = rows.slice(1).map((r) => Object.fromEntries(CSV_COLUMNS.map((c, i) => [c, r[i]])));
      for (const r of rows) expect(r).toHaveLength(CSV_COLUMNS.length);
      expect(records.map((r) => r.record)).toEqual([
        ...OPEN_FINDINGS.map(() => 'finding'),
        ...SHEET_ORDER.map(() => 'balance'),
      ]);
      const findings = records.filter((r) => r.record === 'finding');
      // The formula id comes back whole, behind a quote that keeps a spreadsheet from running it.
      expect(findings.map((r) => `${r.kind} ${r.id}`).sort()).toEqual(
        OPEN_FINDINGS.map((f) => f.replace(FORMULA_ID, `'${FORMULA_ID}`)).sort(),
      );
      expect(findings.find((r) => r.unit_id === BROKEN_UNIT)).toMatchObject({
        id: BROKEN_UNIT,
        issuance_id: `'${FORMULA_ID}`,
      });
      const negative = findings.find((r) => r.kind === 'outstanding-negative')!;
      expect(negative).toMatchObject({
        severity: 'critical',
        expected_kg: '0',
        found_kg: '-3000',
        issuance_id: 'ISS-C',
      });
      expect(negative.detail).toBe(
        'issuance ISS-C: retired 8 t and detokenized 0 t of 5 t tokenized (outstanding -3 t)',
      );
      const a = records.find((r) => r.record === 'balance' && r.id === 'ISS-A')!;
      expect(a).toMatchObject({
        subject: 'issuance',
        tokenized_kg: '50000',
        retired_kg: '10000',
        outstanding_kg: '40000',
        approved: '4',
        issuance_amount_kg: '100000',
        custody: 'held',
        custody_ended_at: '',
        log_operations: '1',
        log_retired_kg: '10000',
        severity: '',
      });
      expect(records.find((r) => r.id === 'U-A2')).toMatchObject({
        subject: 'unit',
        unit_id: 'U-A2',
        issuance_id: 'ISS-A',
      });
    });

    it('--issuance reconciles and shows that issuance alone; the exit code is its findings', async () => {
      const a = await both('--issuance', 'ISS-A');
      expect(a.code).toBe(0);
      expect(a.stdout).toMatch(/^Reconciled issuance ISS-A: 4 operation\(s\), 4 balance sheet\(s\)/);
      expect(a.stdout).toContain('Open findings: none\n');
      expect(a.stdout).toContain('Open findings: 0 critical, 0 warning, 0 info');
      const c = JSON.parse((await both('--issuance', 'ISS-C', '--format', 'json')).stdout);
      expect(c.findings.map((f: { kind: string }) => f.kind)).toEqual(['outstanding-negative']);
      expect(c.balances.map((s: { id: string }) => s.id)).toEqual(['ISS-C']);
      expect((await both('--issuance', 'ISS-E')).code).toBe(1);
      expect((await both('--issuance', 'ISS-G')).code).toBe(0);
      // An issuance nobody reported on: no finding, its sheet all zero, never in custody.
      const none = parseCsv((await both('--issuance', 'ISS-NONE', '--format', 'csv')).stdout);
      expect(none).toHaveLength(2);
      expect(Object.fromEntries(CSV_COLUMNS.map((c, i) => [c, none[1]![i]]))).toMatchObject({
        record: 'balance',
        subject: 'issuance',
        id: 'ISS-NONE',
        tokenized_kg: '0',
        outstanding_kg: '0',
        issuance_amount_kg: '',
        custody: 'never',
        log_operations: '0',
      });
    });

    it("--issuance leaves other issuances' findings alone; a pass over the one that changed resolves its finding", async () => {
      for (const side of sides()) await change(side.store, logRetirement('LOG-E2', 'ISS-E', 2, Date.now()));
      expect((await both('--issuance', 'ISS-A')).stdout).toContain('0 finding(s) opened, 0 resolved');
      for (const side of sides())
        expect(await readOpenCounts((s) => side.store.read(s), null)).toEqual({
          critical: 2,
          warning: 5,
          info: 1,
        });
      const e = await both('--issuance', 'ISS-E');
      expect(e.stdout).toContain('0 finding(s) opened, 1 resolved');
      expect(e.code).toBe(0);
      const all = await both('--format', 'json');
      expect(all.code).toBe(2);
      expect(JSON.parse(all.stdout).counts).toEqual({ critical: 2, warning: 4, info: 1 });
    });

    it('refuses a bad --format or a blank --issuance (64) before opening anything, and a database the daemon never ran on (3)', async () => {
      const format = await both('--format', 'xml');
      expect(format.code).toBe(64);
      expect(format.said).toMatch(
        /option '--format <format>' argument 'xml' is invalid\. Allowed choices are table, json, csv/,
      );
      const blank = await both('--issuance', ' ');
      expect(blank.code).toBe(64);
      expect(blank.said).toBe(
        'vcu-sync: reconcile: --issuance: expected an issuance id, 1-200 characters, not blank',
      );
      for (const side of sides()) {
        const never = await runOn(side, [], side.neverRan);
        expect(never.code).toBe(3);
        expect(never.stdout).toBe('');
        expect(never.said).toMatch(/the daemon has never run with this configuration/);
      }
    });
  });
}
