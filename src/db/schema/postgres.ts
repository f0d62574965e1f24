import { sql } from 'drizzle-orm';
import {
  type AnyPgColumn,
  bigint,
  boolean,
  doublePrecision,
  index,
  integer,
  jsonb,
  type PgColumnBuilderBase,
  pgTable,
  primaryKey,
  text,
  timestamp,
  uniqueIndex,
} from 'drizzle-orm/pg-core';
import { type ColumnKinds, columnsNamed, type KindTypes, type TableSpec } from './kinds.js';
import * as tables from './tables.js';

/**
 * The PostgreSQL schema (drizzle.pg.config.ts; migrations in drizzle/pg/): the tables of this folder
 * in PostgreSQL's types. Times are timestamptz read back as strings (not `Date`) so the store code
 * handles the same values as on SQLite; row ids, positions and offsets bigint (SQLite's INTEGER is
 * 64-bit too) read as JS numbers; JSON (`_raw`, list fields) jsonb; keys text.
 */

const int64 = () => bigint({ mode: 'number' });

const columns = {
  text: () => text(),
  uniqueText: () => text().notNull().unique(),
  int: () => integer(),
  int64,
  real: () => doublePrecision(),
  json: () => jsonb(),
  bool: () => boolean(),
  at: () => timestamp({ withTimezone: true, mode: 'string' }),
  // By default rather than always, so a future import of a SQLite database can keep its ids (and
  // `changes.seq`), then move the sequence past them.
  rowId: () => int64().primaryKey().generatedByDefaultAsIdentity(),
  key: () => text().primaryKey(),
  count: () => integer().notNull().default(0),
  flag: () => boolean().notNull().default(false),
};

const kinds: ColumnKinds<KindTypes<typeof columns, AnyPgColumn>> = {
  ...columns,
  state: <T extends string>() => text().$type<T>().notNull(),
  reference: (parent, onDelete) => int64().references(parent, { onDelete }),
};

function build<N extends string, Cols extends Record<string, PgColumnBuilderBase>>(spec: TableSpec<N, Cols>) {
  return pgTable(spec.name, spec.columns, (t) => [
    ...spec.indexes.map((i) => {
      const on = (i.unique ? uniqueIndex : index)(i.name).on(...columnsNamed<AnyPgColumn>(t, i.on));
      return i.where === undefined ? on : on.where(sql.raw(i.where));
    }),
    ...(spec.primaryKey ? [primaryKey({ columns: columnsNamed<AnyPgColumn>(t, spec.primaryKey) })] : []),
  ]);
}

export const outbox = build(tables.outboxTable(kinds));
export const outboxAttempts = build(tables.outboxAttemptsTable(kinds, () => outbox.id));
export const deliveries = build(tables.deliveriesTable(kinds));
export const webhookEvents = build(tables.webhookEventsTable(kinds, () => outbox.id));
export const webhookRejections = build(tables.webhookRejectionsTable(kinds));
export const daemonState = build(tables.daemonStateTable(kinds));
export const replicas = build(tables.replicasTable(kinds));
export const changes = build(tables.changesTable(kinds));
export const syncRuns = build(tables.syncRunsTable(kinds));
export const syncCheckpoints = build(tables.syncCheckpointsTable(kinds));
export const syncSeen = build(tables.syncSeenTable(kinds));
export const quarantine = build(tables.quarantineTable(kinds));
export const schemaFields = build(tables.schemaFieldsTable(kinds));
export const schemaChanges = build(tables.schemaChangesTable(kinds));
export const reconciliationLedger = build(tables.reconciliationLedgerTable(kinds, () => outbox.id));
export const reconciliationFindings = build(tables.reconciliationFindingsTable(kinds));
export const custodyIds = build(tables.custodyIdsTable(kinds));
export const projects = build(tables.projectsTable(kinds));
export const issuances = build(tables.issuancesTable(kinds));
export const unitOperations = build(tables.unitOperationsTable(kinds));
export const custodyProjects = build(tables.custodyProjectsTable(kinds));
export const custodyIssuances = build(tables.custodyIssuancesTable(kinds));
export const custodyUnits = build(tables.custodyUnitsTable(kinds));
