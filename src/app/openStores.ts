import type { Logger } from '../common/log.js';
import type { Config } from '../config/config.js';
import type { HealthReads } from '../health/snapshot.js';
import type { CommandStoreOptions, DaemonStores, Opened, ShapeReads, Stores } from './stores.js';

/**
 * The one place that picks the database: PostgreSQL when `database.url` is set, else SQLite at
 * `database.path`. Each factory is loaded only when picked, so a SQLite process never loads pg.
 */

/**
 * The daemon's context and stores on the configured database: PostgreSQL with `database.url` (one of
 * any number of replicas; loaded only then, so a SQLite daemon never loads pg), else the SQLite
 * file, owned for the process's life.
 */
export async function openDaemonStores(config: Config, log: Logger): Promise<Opened<DaemonStores>> {
  const url = config.database.url;
  if (url) return (await import('./postgresStores.js')).openPostgresDaemon(config, url, log);
  return (await import('./sqliteDaemon.js')).openSqliteDaemon(config, log);
}

/** A one-shot command's context and stores on the configured database. */
export async function openCommandStores(
  config: Config,
  log: Logger,
  options: CommandStoreOptions = {},
): Promise<Opened<Stores>> {
  const url = config.database.url;
  if (url) return (await import('./postgresStores.js')).openPostgresCommand(config, url, log, options);
  return (await import('./sqliteStores.js')).openSqliteCommand(config, log, options);
}

/**
 * What `vcu-sync status` reads: the health of the configured database, opened read-only and never
 * migrated; `missing` when there is no database to read (a SQLite file never created).
 */
export async function openStatusReads(
  config: Config,
): Promise<{ reads: HealthReads; close(): Promise<void> } | { missing: string }> {
  const url = config.database.url;
  if (url) return (await import('./postgresStores.js')).postgresStatusReads(config, url);
  return (await import('./sqliteStores.js')).sqliteStatusReads(config);
}

/** What `vcu-sync schema` reads: the configured database opened read-only, never migrated. */
export async function openShapeReads(config: Config, log: Logger): Promise<ShapeReads> {
  const url = config.database.url;
  if (url) return (await import('./postgresStores.js')).postgresShapeReads(config, url, log);
  return (await import('./sqliteStores.js')).sqliteShapeReads(config);
}

/** `vcu-sync db migrate`: brings the configured database's schema up to date; the line to print. */
export async function migrateStore(config: Config): Promise<string> {
  const url = config.database.url;
  if (url) return (await import('./postgresStores.js')).postgresMigrate(config, url);
  return (await import('./sqliteStores.js')).sqliteMigrate(config);
}

/** `vcu-sync db backup FILE`: an online copy where the store makes one (SQLite); the line to print. */
export async function backupStore(config: Config, file: string): Promise<string> {
  if (config.database.url) return (await import('./postgresStores.js')).postgresBackup();
  return (await import('./sqliteStores.js')).sqliteBackup(config, file);
}
