import { describe, expect, it } from 'vitest';
import { reconcileExitCode } from '../../src/commands/reconcile.js';
import { csvCell } from '../../src/commands/reconcileFormats.js';
import { issuanceFilter } from '../../src/reconcile/reconcileQuery.js';
import { parseCsv } from '../contract/reconcileCli.cases.js';

/**
 * The pure parts of `vcu-sync reconcile`: a CSV cell (RFC 4180 quoting, the formula guard), the
 * exit code of the open findings, and what --issuance takes. The command as a whole runs in
 * test/contract/reconcileCli.cases.ts.
 */

describe('a CSV cell', () => {
  it.each([
    ['=1+1', "'=1+1"],
    ['+33 1 23', "'+33 1 23"],
    ['-2+3', "'-2+3"],
    ['@SUM(A1)', "'@SUM(A1)"],
    ['\tcmd', "'\tcmd"],
    ['\r=x', '"\'\r=x"'],
    ['plain', 'plain'],
    ['a,b', '"a,b"'],
    ['say "hi"', '"say ""hi"""'],
    ['two\nlines', '"two\nlines"'],
    ['=HYPERLINK("u","x")', '"\'=HYPERLINK(""u"",""x"")"'],
  ])('%j is written %j', (value, written) => {
    expect(csvCell(value)).toBe(written);
    // Read back, it is the value behind the guard's quote (when it has one).
    const back = parseCsv(`${written}\r\n`)[0]![0]!;
    expect(back.replace(/^'(?=[=+\-@\t\r])/, '')).toBe(value);
  });

  it('writes numbers as they are, a negative one too, and nothing for no value', () => {
    expect(csvCell(-3000)).toBe('-3000');
    expect(csvCell(0.5)).toBe('0.5');
    expect(csvCell(null)).toBe('');
    expect(csvCell(undefined)).toBe('');
  });
});

describe('the exit code of the open findings', () => {
  it.each([
    [{ critical: 0, warning: 0, info: 0 }, 0],
    [{ critical: 0, warning: 0, info: 9 }, 0],
    [{ critical: 0, warning: 1, info: 9 }, 1],
    [{ critical: 1, warning: 0, info: 0 }, 2],
    [{ critical: 1, warning: 4, info: 2 }, 2],
  ])('%j exits %i', (counts, code) => {
    expect(reconcileExitCode(counts)).toBe(code);
  });
});

describe('--issuance and ?issuance=', () => {
  it('takes an id trimmed, refuses a blank one or one too long to be an id', () => {
    expect(issuanceFilter(' 100004 ')).toBe('100004');
    expect(issuanceFilter('')).toBeUndefined();
    expect(issuanceFilter('   ')).toBeUndefined();
    expect(issuanceFilter('9'.repeat(200))).toBe('9'.repeat(200));
    expect(issuanceFilter('9'.repeat(201))).toBeUndefined();
  });
});
