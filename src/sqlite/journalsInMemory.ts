import type { Sqlite } from './open.js';
import { setPragma } from './setPragma.js';

/**
 * SQLite keeps the original of each page a statement or a savepoint changes in a sub-journal, and
 * past 64 KiB of it writes it to an unlinked file in the temporary directory (/var/tmp), unless
 * temporary storage is in memory when the transaction begins. The group commit passes that bound
 * all the time: each task runs in a savepoint, and a group of settles changes dozens of pages
 * (./dispatcherBatches.ts). Measured: ~7 writes to such a file a drained outbox row, about half of
 * the dispatcher loop's system time (`npm run bench -- --only outbox`, strace); and those files held
 * copies of outbox rows, personal fields too, where no scrub reaches (docs/outbox.md, "What the
 * scrub leaves on disk"; test/privacy/temporaryFiles.test.ts).
 *
 * So a group's transaction begins with `temp_store = MEMORY`, bounded by what one task changes, and
 * the setting is the default again after it: a read's temporary b-trees (a large sort or GROUP BY)
 * still go to disk instead of growing the heap. The mirror's batches (./mirror.ts) pass the bound
 * too, with public registry data only; kept in memory there, a 1,000,000-unit sync peaked at 174 MB
 * instead of 119 (`npm run bench -- --only rss`), so they keep SQLite's default.
 */

/**
 * Runs `write`, one whole transaction from its BEGIN to its COMMIT, with its journals in memory. The
 * setting goes back in a `finally`, after a rollback too: SQLite refuses the change inside a
 * transaction only while a TEMP table is open, and vcu-sync makes none.
 */
export function journalsInMemory<T>(sqlite: Sqlite, write: () => T): T {
  setPragma(sqlite, 'temp_store = MEMORY');
  try {
    return write();
  } finally {
    setPragma(sqlite, 'temp_store = DEFAULT');
  }
}
