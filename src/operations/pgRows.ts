/**
 * How PostgreSQL statements written with raw `pg` queries read rows back exactly as SQLite's (ISO
 * strings, numeric ids). Statements run through store/postgresScripts.ts need neither: its
 * parsers do the same.
 */

/** A timestamptz as SQLite stores it: `Date#toISOString()` (ms, `Z`). */
export const iso = (col: string) => `to_char(${col} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/** The outbox's columns in SQLite's table order, so an entry prints the same bytes on both stores. */
const COLUMNS = [
  'order_key',
  'body',
  'body_hash',
  'state',
  'attempts',
  'next_attempt_at',
  'lease_owner',
  'lease_until',
  'last_error',
  'last_status',
  'response',
  'decision_reason',
  'created_at',
  'updated_at',
  'accepted_at',
  'decided_at',
  'finished_at',
  'scrubbed_at',
  'retried_at',
];

/** The timestamptz columns, read back as SQLite's ISO text: every `*_at`, and the lease's end. */
const isTime = (column: string) => column.endsWith('_at') || column === 'lease_until';

/** The outbox row as `OperationRow` (camelCase columns are quoted: PostgreSQL folds the rest). */
export function operationColumns(alias = ''): string {
  const a = alias;
  return [
    `${a}id::float8 AS id`,
    `${a}"marketplaceTransactionRef"`,
    `${a}"operationType"`,
    ...COLUMNS.map((c) => (isTime(c) ? `${iso(a + c)} AS ${c}` : a + c)),
  ].join(', ');
}
