import { existsSync, readFileSync, statSync } from 'node:fs';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { isoAt } from '../../src/common/clock.js';
import { sqliteOutboxHooks } from '../../src/sqlite/operationsStore.js';
import { purgeWalIfOwed, walPurgeOwed } from '../../src/sqlite/walPurge.js';
import { testContext } from '../helpers/context.js';
import { enqueueOperation, transfer } from '../outbox/fixtures.js';
import { hostilePeople, personalNeedles } from './leaks.js';

/**
 * The retention scrub leaves no byte of the scrubbed personal data in the database file or its WAL,
 * as `strings vcu.db` would find it: not the scrubbed values, not the copies that each earlier update
 * of the row (state, attempts) left in freed space, not the row's old pages in the WAL. The files are
 * read as bytes and searched for every form of every value.
 */

const SCRUBBED = Array.from({ length: 40 }, (_, i) => hostilePeople(i + 1));
// Index 0: no scrubbed person's value is a prefix of its values (person 5's "...-5" is of "...-50").
const KEPT = hostilePeople(0);

/** The needles of `people` found in the database file and its WAL, each with the file it is in. */
function foundInFiles(file: string, people: ReadonlyArray<Record<string, string>>): string[] {
  const found: string[] = [];
  for (const f of [file, `${file}-wal`]) {
    if (!existsSync(f)) continue;
    const bytes = readFileSync(f);
    for (const needle of personalNeedles(people, false)) {
      if (bytes.includes(Buffer.from(needle, 'utf8')))
        found.push(`${f.endsWith('-wal') ? 'wal' : 'db'}: ${needle}`);
    }
  }
  return found;
}

describe('the scrub leaves no copy in the file', () => {
  it('no scrubbed value in the database file or its WAL, once a reader holding an old snapshot lets go', async () => {
    const ctx = testContext({ overrides: { 'operator.marketplace_id': 'mkt-1' } });
    try {
      const db = ctx.database.sqlite;
      const file = ctx.database.path;
      SCRUBBED.forEach((person, i) => {
        // Some bodies past a page, so their records spill into overflow pages that updates free.
        const wallet = `0x${'a'.repeat((i % 4) * 2_000)}`;
        const input = {
          ...transfer(`scrub-file-${i}`, { unitId: 70_000 + i }),
          ...person,
          originWallet: wallet,
        };
        expect(enqueueOperation(ctx, input).status).toBe(201);
      });
      expect(
        enqueueOperation(ctx, { ...transfer('scrub-file-open', { unitId: 79_999 }), ...KEPT }).status,
      ).toBe(201);
      // The life of a row: each update rewrites its whole record, body included, and frees the old one.
      const scrubbedIds = 'id <= 40';
      for (const state of ['sending', 'accepted', 'sending', 'accepted'])
        db.prepare(`UPDATE outbox SET state = ?, attempts = attempts + 1 WHERE ${scrubbedIds}`).run(state);
      const old = isoAt(Date.parse('2026-01-01T00:00:00Z'));
      db.prepare(
        `UPDATE outbox SET state = 'approved', finished_at = @old, decided_at = @old WHERE ${scrubbedIds}`,
      ).run({ old });
      // Folded into the file as the daemon's checkpoints do, so both files hold copies.
      db.pragma('wal_checkpoint(PASSIVE)');
      const before = foundInFiles(file, SCRUBBED);
      expect(before.some((f) => f.startsWith('db:'))).toBe(true);
      expect(before.some((f) => f.startsWith('wal:'))).toBe(true);

      // A reader (another process, a backup) on a snapshot from before the scrub.
      const reader = new Database(file, { readonly: true });
      reader.exec('BEGIN');
      reader.prepare('SELECT count(*) FROM outbox').get();

      expect(await sqliteOutboxHooks(db).scrubFinished(Date.parse('2026-03-01T00:00:00Z'), 30)).toBe(
        SCRUBBED.length,
      );
      // The WAL cannot be emptied under the reader: owed, and its old pages are still there.
      expect(walPurgeOwed(db)).toBe(true);
      expect(foundInFiles(file, SCRUBBED).some((f) => f.startsWith('wal:'))).toBe(true);
      expect(purgeWalIfOwed(db)).toBe(false);

      reader.exec('COMMIT');
      reader.close();
      expect(purgeWalIfOwed(db)).toBe(true);
      expect(walPurgeOwed(db)).toBe(false);
      expect(statSync(`${file}-wal`).size).toBe(0);
      expect(foundInFiles(file, SCRUBBED)).toEqual([]);
      // The search does find what is still there: the open row keeps its body.
      expect(foundInFiles(file, [KEPT]).length).toBeGreaterThan(0);
      // Nothing lost: every row is still there, and the scrubbed ones say so.
      expect(db.prepare('SELECT count(*) FROM outbox WHERE scrubbed_at IS NOT NULL').pluck().get()).toBe(40);
      expect(db.prepare('SELECT count(*) FROM outbox').pluck().get()).toBe(41);
      expect(db.pragma('quick_check', { simple: true })).toBe('ok');
    } finally {
      ctx.dispose();
    }
  });

  it('a scrub with nothing to scrub pays a purge owed from before', async () => {
    const ctx = testContext({ overrides: { 'operator.marketplace_id': 'mkt-1' } });
    try {
      const db = ctx.database.sqlite;
      const file = ctx.database.path;
      const person = hostilePeople(7);
      expect(enqueueOperation(ctx, { ...transfer('scrub-owed-1'), ...person }).status).toBe(201);
      db.prepare(`UPDATE outbox SET state = 'rejected', finished_at = ?, decided_at = ?`).run(
        isoAt(Date.parse('2026-01-01T00:00:00Z')),
        isoAt(Date.parse('2026-01-01T00:00:00Z')),
      );
      const reader = new Database(file, { readonly: true });
      reader.exec('BEGIN');
      reader.prepare('SELECT count(*) FROM outbox').get();
      expect(await sqliteOutboxHooks(db).scrubFinished(Date.parse('2026-03-01T00:00:00Z'), 30)).toBe(1);
      expect(walPurgeOwed(db)).toBe(true);
      reader.exec('COMMIT');
      reader.close();
      expect(await sqliteOutboxHooks(db).scrubFinished(Date.parse('2026-03-02T00:00:00Z'), 30)).toBe(0);
      expect(walPurgeOwed(db)).toBe(false);
      expect(foundInFiles(file, [person])).toEqual([]);
    } finally {
      ctx.dispose();
    }
  });
});
