import { describe, expect, it } from 'vitest';
import { judge, LOCK_WARNING_MS, type RuleInputs } from '../../src/health/rules.js';
import { NO_FAULTS, unreadableSnapshot } from '../../src/health/snapshot.js';
import { busyRetryDelay } from '../../src/sqlite/commitQueue.js';
import { classifyDatabaseError, faultCause } from '../../src/sqlite/faults.js';
import { privateFileMode } from '../../src/sqlite/fileMode.js';
import { checkResult } from '../../src/sqlite/integrity.js';

const NOW = Date.parse('2026-03-01T12:00:00.000Z');
const inputs: RuleInputs = {
  now: NOW,
  periods: {},
  stalePeriods: 3,
  decisionWarnHours: 48,
  decisionWarnCount: 20,
};
const iso = (ms: number) => new Date(ms).toISOString();

describe('database faults: what an error means', () => {
  it('sorts SQLite codes, extended ones included, into lock, write and corruption; others are not faults', () => {
    const kind = (code: string) => classifyDatabaseError(Object.assign(new Error('x'), { code }));
    expect(kind('SQLITE_BUSY')).toBe('busy');
    expect(kind('SQLITE_BUSY_SNAPSHOT')).toBe('busy');
    expect(kind('SQLITE_FULL')).toBe('write');
    expect(kind('SQLITE_READONLY')).toBe('write');
    expect(kind('SQLITE_READONLY_DBMOVED')).toBe('write');
    expect(kind('SQLITE_IOERR_WRITE')).toBe('write');
    expect(kind('SQLITE_CORRUPT')).toBe('corrupt');
    expect(kind('SQLITE_CORRUPT_INDEX')).toBe('corrupt');
    expect(kind('SQLITE_NOTADB')).toBe('corrupt');
    expect(kind('SQLITE_CONSTRAINT_UNIQUE')).toBeNull();
    expect(classifyDatabaseError(new Error('a bug'))).toBeNull();
    expect(classifyDatabaseError(Object.assign(new Error('x'), { code: 'ENOENT' }))).toBeNull();
  });

  it('names the cause /readyz gives, extended codes by their primary one', () => {
    const causes = Object.fromEntries(
      [
        'SQLITE_FULL',
        'SQLITE_READONLY',
        'SQLITE_READONLY_DBMOVED',
        'SQLITE_IOERR_WRITE',
        'SQLITE_IOERR_FSYNC',
        'SQLITE_BUSY',
        'SQLITE_CORRUPT',
        'SQLITE_NOTADB',
        'SQLITE_CANTOPEN',
        'SQLITE_PERM',
      ].map((code) => [code, faultCause(code)]),
    );
    expect(causes).toEqual({
      SQLITE_FULL: 'disk-full',
      SQLITE_READONLY: 'database-read-only',
      SQLITE_READONLY_DBMOVED: 'database-read-only',
      SQLITE_IOERR_WRITE: 'database-io-error',
      SQLITE_IOERR_FSYNC: 'database-io-error',
      SQLITE_BUSY: 'database-locked',
      SQLITE_CORRUPT: 'database-corrupt',
      SQLITE_NOTADB: 'database-corrupt',
      SQLITE_CANTOPEN: 'database-write-failed',
      SQLITE_PERM: 'database-write-failed',
    });
  });

  it('retries a held lock every millisecond at first, then with growing waits, never more than half a second', () => {
    const waits = Array.from({ length: 30 }, (_, i) => busyRetryDelay(i + 1));
    expect(waits.slice(0, 16)).toEqual(Array(16).fill(1));
    expect(waits[16]).toBeGreaterThan(1);
    for (let i = 1; i < waits.length; i++) expect(waits[i]).toBeGreaterThanOrEqual(waits[i - 1]!);
    expect(Math.max(...waits)).toBe(500);
  });

  it('reads quick_check: "ok" alone is sound, anything else is the damage found', () => {
    expect(checkResult(['ok'])).toEqual({ ok: true });
    expect(
      checkResult(['*** in database main ***', 'Page 7: btreeInitPage() returns error code 11']),
    ).toEqual({
      ok: false,
      detail: '*** in database main ***; Page 7: btreeInitPage() returns error code 11',
    });
  });
});

describe('database file modes', () => {
  it('owner only under a umask that lets others read; group read when the umask already shuts others out', () => {
    expect(privateFileMode(0o022).toString(8)).toBe('600');
    expect(privateFileMode(0o002).toString(8)).toBe('600');
    expect(privateFileMode(0o000).toString(8)).toBe('600');
    // The unit's UMask=0027: group readers chosen by whoever set it.
    expect(privateFileMode(0o027).toString(8)).toBe('640');
    expect(privateFileMode(0o007).toString(8)).toBe('640');
    expect(privateFileMode(0o077).toString(8)).toBe('600');
  });
});

describe('database health rules', () => {
  const problems = (database: Partial<typeof NO_FAULTS>) =>
    judge(unreadableSnapshot({ ...NO_FAULTS, ...database }), inputs);

  it('a failing write is critical, with the SQLite error and how long it has lasted', () => {
    const verdict = problems({
      writeFailure: {
        code: 'SQLITE_FULL',
        message: 'database or disk is full',
        since: iso(NOW - 120_000),
        lastAt: iso(NOW - 1_000),
        failures: 17,
      },
    });
    expect(verdict.status).toBe('critical');
    const p = verdict.problems.find((x) => x.code === 'database-write-failed');
    expect(p?.severity).toBe('critical');
    expect(p?.message).toContain('SQLITE_FULL: database or disk is full');
    expect(p?.message).toContain('17 failed');
    expect(p?.action).toMatch(/disk space/);
  });

  it('corruption is critical and says to restore the backup', () => {
    const verdict = problems({
      corruption: {
        detail: 'Page 12: btreeInitPage() returns error code 11',
        at: iso(NOW),
        source: 'integrity-check',
      },
    });
    expect(verdict.status).toBe('critical');
    const p = verdict.problems.find((x) => x.code === 'database-corrupt');
    expect(p?.message).toContain('Page 12');
    expect(p?.action).toMatch(/backup/);
  });

  it('a database status cannot read is critical', () => {
    const verdict = problems({ readError: 'SQLITE_IOERR_READ: disk I/O error' });
    expect(verdict.problems.map((x) => x.code)).toEqual(['database-unreadable']);
    expect(verdict.status).toBe('critical');
  });

  it('a lock held by another process is a warning only once it has lasted', () => {
    expect(problems({ lockedSince: iso(NOW - LOCK_WARNING_MS + 1_000) }).problems).toEqual([]);
    const verdict = problems({ lockedSince: iso(NOW - 95_000) });
    expect(verdict.status).toBe('warning');
    expect(verdict.problems[0]?.code).toBe('database-locked');
    expect(verdict.problems[0]?.message).toContain('95s');
  });

  it('nothing wrong, no problem', () => {
    expect(problems({})).toEqual({ status: 'ok', problems: [] });
  });
});
