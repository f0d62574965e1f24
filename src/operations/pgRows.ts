import { OPERATION_COLUMNS } from './transitions.js';

/**
 * How PostgreSQL statements written with raw `pg` queries read rows back exactly as SQLite's (ISO
 * strings, numeric ids). Statements run through store/postgresScripts.ts need neither: its
 * parsers do the same.
 */

/** A timestamptz as SQLite stores it: `Date#toISOString()` (ms, `Z`). */
export const iso = (col: string) => `to_char(${col} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/** The timestamptz columns, read back as SQLite's ISO text: every `*_at`, and the lease's end. */
const isTime = (column: string) => column.endsWith('_at') || column === 'lease_until';

/** The outbox row as `OperationRow` in the table's order, so an entry prints the same bytes on both stores. */
export function operationColumns(alias = ''): string {
  return OPERATION_COLUMNS.map((c) =>
    c === 'id' ? `${alias}id::float8 AS id` : isTime(c) ? `${iso(alias + c)} AS ${c}` : alias + c,
  ).join(', ');
}
