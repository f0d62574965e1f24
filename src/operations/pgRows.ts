import type pg from 'pg';
import { drivePostgres } from '../store/postgresScripts.js';
import type { StateChange, StateChangeSink } from './effects.js';
import { type GuardParams, OUTBOX_COLUMNS } from './rows.js';
import { stateChanged } from './stateChanged.js';

/**
 * What the PostgreSQL operations store shares across its statements: how rows read back exactly
 * as SQLite's (`OperationRow`: ISO strings, numeric ids), the guards' placeholders, and the one
 * place every state change passes (the sink's writes, then the feed: recordChangesPg's rows are
 * appended under the feed's lock as the transaction commits; the deliveries' sink takes the lock
 * before its rows when there are some).
 */

/** Every statement binds $1 = now, $2 = owner, so the transition table's guards read the same. */
export const PG_GUARD: GuardParams = { now: '$1::timestamptz', owner: '$2' };

/** A timestamptz as SQLite stores it: `Date#toISOString()` (ms, `Z`). */
export const iso = (col: string) => `to_char(${col} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/** The outbox's columns after its id, ref and type, in SQLite's table order (rows.ts). */
const COLUMNS = OUTBOX_COLUMNS.slice(3);

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

/** Every state change passes here, in its transaction: the rule is stateChanged.ts's, run on `client`. */
export function stateChangedPg(
  client: pg.ClientBase,
  sink: StateChangeSink | undefined,
  changes: readonly StateChange[],
): Promise<void> {
  return drivePostgres(client, stateChanged(changes, sink));
}
