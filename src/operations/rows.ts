import type { OutboxAttemptRecord, OutboxRecord } from '../db/schema/rowTypes.js';
import { join, raw, type Sql, sql } from '../store/sql.js';
import { fromStates, type Guard, type OperationEvent } from './states.js';

/**
 * How a statement locks outbox rows where replicas share the store. Not `FOR UPDATE`: three tables
 * reference the outbox (attempts, webhook events, the reconciliation's ledger), and inserting a
 * row that names one takes `FOR KEY SHARE` on it, which `FOR UPDATE` conflicts with. A claim's
 * SKIP LOCKED then passed over a row while the reconciler ledgered it, and a settle found its own
 * row "held". No statement changes an outbox id, so the weaker lock excludes every other writer.
 */
export const OUTBOX_ROW_LOCK = 'FOR NO KEY UPDATE';

/** An operation (outbox row) exactly as stored; the type is drizzle's, from the schema. */
export type OperationRow = OutboxRecord;

/** One delivery attempt of an operation as stored. */
export type AttemptRow = OutboxAttemptRecord;

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
 * What the guards compare against: a bound value (one row's move) or a column of a batch's rows
 * (`s.now`, PostgreSQL's multi-row settle). Times compare as instants on both stores: ISO text
 * that sorts as text on SQLite, `timestamptz` on PostgreSQL.
 */
export interface GuardValues {
  now: Sql;
  owner: Sql;
}

const GUARD_SQL: Record<Guard, (v: GuardValues, alias: Sql) => Sql> = {
  due: (v, a) => sql`${a}next_attempt_at <= ${v.now}`,
  'lease-expired': (v, a) => sql`${a}lease_until < ${v.now}`,
  'own-lease': (v, a) => sql`${a}lease_owner = ${v.owner}`,
};

/** A guard as SQL over a row (optionally through a table alias such as `o.`). */
export function guardSql(guard: Guard, values: GuardValues, alias = ''): Sql {
  return GUARD_SQL[guard](values, raw(alias));
}

/** Per event and alias, the table's from-states as SQL (`(state = 'queued'`), built once: claims and settles run per row. */
const fromTerms = new Map<string, ReadonlyArray<{ state: Sql; when: Guard | undefined }>>();

function termsOf(event: OperationEvent, alias: string) {
  const key = `${event} ${alias}`;
  let terms = fromTerms.get(key);
  if (terms === undefined) {
    terms = fromStates(event).map(({ from, when }) => ({ state: raw(`(${alias}state = '${from}'`), when }));
    fromTerms.set(key, terms);
  }
  return terms;
}

/** The condition under which `event` applies to a row, derived from the transition table. */
export function eventAppliesSql(event: OperationEvent, values: GuardValues, alias = ''): Sql {
  const terms = termsOf(event, alias).map(({ state, when }) =>
    when ? sql`${state} AND ${guardSql(when, values, alias)})` : sql`${state})`,
  );
  return sql`(${join(terms, ' OR ')})`;
}
