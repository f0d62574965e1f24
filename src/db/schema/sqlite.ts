import { sql } from 'drizzle-orm';
import {
  type AnySQLiteColumn,
  index,
  integer,
  primaryKey,
  real,
  type SQLiteColumnBuilderBase,
  sqliteTable,
  text,
  uniqueIndex,
} from 'drizzle-orm/sqlite-core';
import { type ColumnKinds, columnsNamed, type KindTypes, type TableSpec } from './kinds.js';
import * as tables from './tables.js';

/**
 * The SQLite schema (drizzle.config.ts; migrations in drizzle/): the tables of this folder in
 * SQLite's storage classes. Times are ISO text (which sorts as time), booleans and 64-bit integers
 * INTEGER, JSON text.
 */

const columns = {
  text: () => text(),
  uniqueText: () => text().notNull().unique(),
  int: () => integer(),
  int64: () => integer(),
  real: () => real(),
  json: () => text(),
  bool: () => integer({ mode: 'boolean' }),
  at: () => text(),
  rowId: () => integer().primaryKey({ autoIncrement: true }),
  key: () => text().primaryKey(),
  count: () => integer().notNull().default(0),
  flag: () => integer({ mode: 'boolean' }).notNull().default(false),
};

const kinds: ColumnKinds<KindTypes<typeof columns, AnySQLiteColumn>> = {
  ...columns,
  state: <T extends string>() => text().$type<T>().notNull(),
  reference: (parent, onDelete) => integer().references(parent, { onDelete }),
};

function build<N extends string, Cols extends Record<string, SQLiteColumnBuilderBase>>(
  spec: TableSpec<N, Cols>,
) {
  return sqliteTable(spec.name, spec.columns, (t) => [
    ...spec.indexes.map((i) => {
      const on = (i.unique ? uniqueIndex : index)(i.name).on(...columnsNamed<AnySQLiteColumn>(t, i.on));
      return i.where === undefined ? on : on.where(sql.raw(i.where));
    }),
    ...(spec.primaryKey ? [primaryKey({ columns: columnsNamed<AnySQLiteColumn>(t, spec.primaryKey) })] : []),
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
