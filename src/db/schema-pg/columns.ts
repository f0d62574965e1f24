import { bigint, timestamp } from 'drizzle-orm/pg-core';

/**
 * Column kinds the PostgreSQL schema uses where SQLite has one storage class for several meanings.
 * SQLite keeps times as ISO text; here they are `timestamptz`, read back as strings (not `Date`)
 * so the store code handles the same values on both dialects. Row ids and positions are `bigint`
 * (SQLite's INTEGER is 64-bit too), read back as JS numbers: none comes near 2^53.
 */

/** A point in time: `timestamptz`, strings in and out. */
export const at = (name: string) => timestamp(name, { withTimezone: true, mode: 'string' });

/** A 64-bit integer read as a JS number. */
export const int64 = (name: string) => bigint(name, { mode: 'number' });

/**
 * A row id: 64-bit identity. "By default" rather than "always" so a future import of a SQLite
 * database can keep its ids (and `changes.seq`), then move the sequence past them.
 */
export const rowId = (name: string) => int64(name).primaryKey().generatedByDefaultAsIdentity();
