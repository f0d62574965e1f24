import type { outbox, outboxAttempts } from '../db/schema/sqlite.js';
import { fromStates, type Guard, type OperationEvent } from './states.js';

/** An operation (outbox row) exactly as stored; the type is drizzle's, from the schema. */
export type OperationRow = typeof outbox.$inferSelect;

/** One delivery attempt of an operation as stored. */
export type AttemptRow = typeof outboxAttempts.$inferSelect;

/**
 * The outbox's columns in SQLite's table order: reads name them rather than `*`, so a row has the
 * same keys in the same order on both stores (an entry prints the same bytes).
 */
export const OUTBOX_COLUMNS = [
  'id',
  'marketplaceTransactionRef',
  'operationType',
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
] as const satisfies ReadonlyArray<keyof OperationRow>;

/**
 * Timestamps are ISO strings (`isoAt`), which sort as text, so `next_attempt_at <= @now`
 * compares instants. Guards read `@now` and `@owner`.
 */
const GUARD_SQL: Record<Guard, (p: GuardParams) => string> = {
  due: (p) => `next_attempt_at <= ${p.now}`,
  'lease-expired': (p) => `lease_until < ${p.now}`,
  'own-lease': (p) => `lease_owner = ${p.owner}`,
};

/**
 * How the guards name their parameters: better-sqlite3's `@now`/`@owner` by default; the
 * PostgreSQL store passes `$n::timestamptz` / `$n` (same conditions, other dialect).
 */
export interface GuardParams {
  now: string;
  owner: string;
}

const SQLITE_PARAMS: GuardParams = { now: '@now', owner: '@owner' };

/** A guard as SQL over a row (optionally through a table alias such as `o.`). */
export function guardSql(guard: Guard, alias = '', params: GuardParams = SQLITE_PARAMS): string {
  return `${alias}${GUARD_SQL[guard](params)}`;
}

/** The condition under which `event` applies to a row, derived from the transition table. */
export function eventAppliesSql(
  event: OperationEvent,
  alias = '',
  params: GuardParams = SQLITE_PARAMS,
): string {
  const terms = fromStates(event).map(({ from, when }) => {
    const state = `${alias}state = '${from}'`;
    return when ? `(${state} AND ${guardSql(when, alias, params)})` : `(${state})`;
  });
  return `(${terms.join(' OR ')})`;
}
