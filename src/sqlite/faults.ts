/**
 * What the database cannot say about itself: a write that failed (disk full, file read-only, I/O
 * error), another process holding the write lock, pages found corrupt. Every writer on a connection
 * reports here (the group commit, the API's error handler, the sync runs), and health reads it, so
 * `/status` turns critical the moment writes fail instead of saying "ok" over a stream of 500s.
 * Kept in memory per connection: a write failure cannot be recorded in the file that refuses it.
 */
import type { DatabaseFacts } from '../health/snapshot.js';
import type { Sqlite } from './open.js';
import { perHandle } from './perHandle.js';

/** What a SQLite error means for the daemon. */
export type DatabaseFaultKind = 'busy' | 'write' | 'corrupt';

/** SQLite result codes by kind (primary codes; extended ones such as SQLITE_IOERR_WRITE map by prefix). */
const KIND_OF_CODE: Record<string, DatabaseFaultKind> = {
  SQLITE_BUSY: 'busy',
  SQLITE_FULL: 'write',
  SQLITE_READONLY: 'write',
  SQLITE_IOERR: 'write',
  SQLITE_CANTOPEN: 'write',
  SQLITE_PERM: 'write',
  SQLITE_CORRUPT: 'corrupt',
  SQLITE_NOTADB: 'corrupt',
};

/**
 * The cause of a write fault, named for a reader of /readyz: `disk-full`, `database-read-only`,
 * `database-io-error`, `database-locked`, `database-corrupt`, or `database-write-failed` for any
 * other code. By primary code (SQLITE_IOERR_WRITE is an I/O error). Pure.
 */
export function faultCause(code: string): string {
  const primary = /^SQLITE_[A-Z]+/.exec(code)?.[0] ?? code;
  return CAUSE_OF_CODE[primary] ?? 'database-write-failed';
}

const CAUSE_OF_CODE: Record<string, string> = {
  SQLITE_FULL: 'disk-full',
  SQLITE_READONLY: 'database-read-only',
  SQLITE_IOERR: 'database-io-error',
  SQLITE_BUSY: 'database-locked',
  SQLITE_CORRUPT: 'database-corrupt',
  SQLITE_NOTADB: 'database-corrupt',
};

/** How long a client should wait before trying a refused write again, seconds, by kind. */
const RETRY_AFTER_SECONDS: Record<DatabaseFaultKind, number> = { busy: 1, write: 30, corrupt: 300 };

const DEFAULT_CODE: Record<DatabaseFaultKind, string> = {
  busy: 'SQLITE_BUSY',
  write: 'SQLITE_ERROR',
  corrupt: 'SQLITE_CORRUPT',
};

/** The SQLite result code of an error (`SQLITE_FULL`, `SQLITE_IOERR_WRITE`, ...), if it has one. */
export function sqliteCode(err: unknown): string | undefined {
  if (err instanceof DatabaseUnavailable) return err.code;
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code.startsWith('SQLITE_') ? code : undefined;
}

/** Which kind of database fault an error is, or null when it is not one (a constraint, a bug). Pure. */
export function classifyDatabaseError(err: unknown): DatabaseFaultKind | null {
  if (err instanceof DatabaseUnavailable) return err.kind;
  const code = sqliteCode(err);
  if (!code) return null;
  const primary = /^SQLITE_[A-Z]+/.exec(code)?.[0] ?? code;
  return KIND_OF_CODE[primary] ?? null;
}

/** A write refused because of the database's state; the API answers it with 503 and Retry-After. */
export class DatabaseUnavailable extends Error {
  readonly retryAfterSeconds: number;

  constructor(
    readonly kind: DatabaseFaultKind,
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'DatabaseUnavailable';
    this.retryAfterSeconds = RETRY_AFTER_SECONDS[kind];
  }
}

/**
 * The refusal for a database fault, with a message fit for a client: the SQLite code and SQLite's
 * own words for it (they never hold row values), nothing else.
 */
export function unavailableFor(err: unknown, kind: DatabaseFaultKind): DatabaseUnavailable {
  if (err instanceof DatabaseUnavailable) return err;
  const code = sqliteCode(err) ?? DEFAULT_CODE[kind];
  const words = describe(err);
  const message =
    kind === 'busy'
      ? 'the database is locked by another process; retry later'
      : kind === 'corrupt'
        ? 'the database file is damaged; writes are refused until it is restored from a backup'
        : `the database cannot be written (${code}: ${words}); retry later`;
  return new DatabaseUnavailable(kind, code, message);
}

function describe(err: unknown): string {
  const text = err instanceof Error ? err.message : String(err);
  return text.length > 200 ? `${text.slice(0, 200)}...` : text;
}

/** The fault state of one connection. */
export class DatabaseFaults {
  private writeFailure: DatabaseFacts['writeFailure'] = null;
  private lockedSince: string | null = null;
  private corruption: DatabaseFacts['corruption'] = null;

  constructor(
    private readonly sqlite: Sqlite | undefined,
    private readonly now: () => number = Date.now,
  ) {}

  /** Records what an error says about the database; returns its kind (null: not a database fault). */
  noteFailure(err: unknown): DatabaseFaultKind | null {
    const kind = classifyDatabaseError(err);
    if (kind === null) return null;
    // A refusal was noted where the error it stands for was.
    if (err instanceof DatabaseUnavailable) return kind;
    // After corruption every write is refused on purpose: that is not a second fault.
    if (this.corruption) return 'corrupt';
    const at = new Date(this.now()).toISOString();
    if (kind === 'busy') {
      this.lockedSince ??= at;
    } else if (kind === 'corrupt') {
      this.markCorrupt(describe(err), 'query');
    } else {
      const code = sqliteCode(err) ?? 'SQLITE_ERROR';
      const message = describe(err);
      const previous = this.writeFailure;
      this.writeFailure = {
        code,
        message,
        since: previous?.since ?? at,
        lastAt: at,
        failures: (previous?.failures ?? 0) + 1,
      };
    }
    return kind;
  }

  /** A write was committed: whatever refused writes before has passed. */
  noteWriteSucceeded(): void {
    this.writeFailure = null;
    this.lockedSince = null;
  }

  /** The write lock was taken: another process no longer holds it. */
  noteLockTaken(): void {
    this.lockedSince = null;
  }

  /**
   * Marks the file corrupt and makes the connection refuse every write from now on (`query_only`),
   * whichever code path tries one: writing into damaged pages spreads the damage.
   */
  markCorrupt(detail: string, source: 'integrity-check' | 'query'): void {
    if (this.corruption) return;
    this.corruption = { detail, at: new Date(this.now()).toISOString(), source };
    try {
      this.sqlite?.pragma('query_only = ON');
    } catch {
      // A closed connection writes nothing anyway.
    }
  }

  /** Why writes are refused before they are tried, if they are. */
  refusal(): DatabaseUnavailable | null {
    if (!this.corruption) return null;
    return unavailableFor(undefined, 'corrupt');
  }

  facts(): DatabaseFacts {
    return {
      writeFailure: this.writeFailure && { ...this.writeFailure },
      lockedSince: this.lockedSince,
      corruption: this.corruption && { ...this.corruption },
      readError: null,
    };
  }
}

/** The one fault tracker of a connection, shared by everything that writes through it. */
export const databaseFaultsFor: (sqlite: Sqlite) => DatabaseFaults = perHandle(
  (sqlite) => new DatabaseFaults(sqlite),
);
