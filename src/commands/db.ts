import type { Config } from '../config.js';
import { backupDatabase } from '../db/backup.js';
import { openDatabase } from '../db/open.js';
import { UserError } from '../errors.js';
import { instanceName } from '../health/identity.js';
import { requireDatabase } from './withContext.js';

/** Exit code of `db backup` on PostgreSQL: the command does not apply there (sysexits EX_USAGE). */
export const EXIT_BACKUP_POSTGRES = 64;

/** `vcu-sync db migrate`: applies pending migrations and says which state the schema is in. */
export async function runDbMigrate(config: Config): Promise<number> {
  if (config.database.url) return migratePostgresCommand(config, config.database.url);
  const database = openDatabase(config.database.path, { synchronous: config.database.synchronous });
  try {
    const applied = database.sqlite
      .prepare('SELECT count(*) FROM __drizzle_migrations')
      .pluck()
      .get() as number;
    process.stdout.write(`${config.database.path}: schema up to date (${applied} migrations applied)\n`);
    return 0;
  } finally {
    database.close();
  }
}

async function migratePostgresCommand(config: Config, url: string): Promise<number> {
  // Loaded here so the SQLite commands never load pg.
  const { appliedMigrations, openPostgres } = await import('../db/pg.js');
  const { pgApplicationName } = await import('../db/pgConfig.js');
  const database = await openPostgres(url, {
    applicationName: pgApplicationName(instanceName(config)),
    max: 1,
  });
  try {
    const applied = await appliedMigrations(database.pool);
    process.stdout.write(`postgresql ${database.label}: schema up to date (${applied} migrations applied)\n`);
    return 0;
  } finally {
    await database.close();
  }
}

/** `vcu-sync db backup FILE`: an online backup, safe while the daemon writes. */
export async function runDbBackup(config: Config, file: string): Promise<number> {
  if (config.database.url) {
    throw new UserError(
      'database.url is set: back up PostgreSQL with pg_dump (e.g. pg_dump --format=custom --file=FILE DBNAME); db backup copies a SQLite file only',
      EXIT_BACKUP_POSTGRES,
    );
  }
  requireDatabase(config);
  const database = openDatabase(config.database.path, { migrate: false });
  try {
    const result = await backupDatabase(database.sqlite, file);
    const rows = Object.values(result.tables).reduce((a, b) => a + b, 0);
    process.stdout.write(
      `backup written to ${result.file}: ${result.pages} pages, ${rows} rows in ${Object.keys(result.tables).length} tables\n`,
    );
    return 0;
  } finally {
    database.sqlite.close();
  }
}
