import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runReconcileCommand } from '../../src/commands/reconcile.js';
import type { ReconcileFormat } from '../../src/commands/reconcileFormats.js';
import { commitQueueFor } from '../../src/sqlite/commitQueue.js';
import { parseCsv } from '../contract/reconcileCli.cases.js';
import { bookSettings, OPEN_FINDINGS, SHEET_ORDER, writeBook } from '../contract/reconciliationBook.js';
import { testContext } from '../helpers/context.js';

/**
 * `vcu-sync reconcile` printing a book larger than its page: every format streams page by page, and
 * what it prints is what one page holding everything prints (the JSON still one document, the CSV
 * one header; the tables' columns are set per page). In process, on a SQLite file; the command as a child
 * process on both stores is test/contract/reconcileCli.cases.ts.
 */

let ctx: ReturnType<typeof testContext>;
const now = Date.parse('2026-03-10T00:00:00Z');

beforeAll(async () => {
  ctx = testContext();
  await writeBook(commitQueueFor(ctx.database.sqlite), now);
});
afterAll(() => ctx?.dispose());

/** What the command prints with `pageSize`, and its exit code. */
async function printed(format: ReconcileFormat, pageSize: number): Promise<{ code: number; text: string }> {
  let text = '';
  const stdout = new Writable({
    write(chunk, _encoding, done) {
      text += String(chunk);
      done();
    },
  });
  const code = await runReconcileCommand(
    { store: commitQueueFor(ctx.database.sqlite), settings: bookSettings(), now: () => now },
    { issuance: null, format, stdout, pageSize },
  );
  return { code, text };
}

describe('vcu-sync reconcile over several pages', () => {
  it.each([['json'], ['csv']] as const)('%s prints the same in pages of 2 as in one page', async (format) => {
    const whole = await printed(format, 1000);
    const paged = await printed(format, 2);
    expect(paged).toEqual(whole);
    expect(whole.code).toBe(2);
  });

  it('the table prints the same rows in pages of 2, each page a table of its own under one heading', async () => {
    /** The lines as cells, the column headers of each page's table left out. */
    const cells = (text: string) =>
      text
        .split('\n')
        .filter((l) => !/^(SEVERITY|SUBJECT) /.test(l))
        .map((l) => l.trim().split(/\s{2,}/));
    const whole = await printed('table', 1000);
    const paged = await printed('table', 2);
    expect(paged.code).toBe(whole.code);
    expect(cells(paged.text)).toEqual(cells(whole.text));
    expect(paged.text.match(/^Open findings \(/gm)).toHaveLength(1);
    expect(paged.text.match(/^Balance sheets \(/gm)).toHaveLength(1);
    expect(paged.text.match(/^SEVERITY /gm)).toHaveLength(Math.ceil(OPEN_FINDINGS.length / 2));
  });

  it('the JSON is one document, the CSV one header, with every finding and sheet', async () => {
    const json = JSON.parse((await printed('json', 3)).text);
    expect(json.findings).toHaveLength(OPEN_FINDINGS.length);
    expect(json.balances).toHaveLength(SHEET_ORDER.length);
    expect(json.next).toBeNull();
    const rows = parseCsv((await printed('csv', 3)).text);
    expect(rows).toHaveLength(1 + OPEN_FINDINGS.length + SHEET_ORDER.length);
    expect(rows.filter((r) => r[0] === 'record')).toHaveLength(1);
  });
});
