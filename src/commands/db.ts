import type { Config } from '../config.js';
import { backupDatabase } from '../db/backup.js';
import { openDatabase } from '../db/open.js';
import { requireDatabase } from './withContext.js';

/** `vcu-sync db migrate`: applies pending migrations and says which state the schema is in. */
export async function runDbMigrate(config: Config): Promise<number> {
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

/** `vcu-sync db backup FILE`: an online backup, safe while the daemon writes. */
export async function runDbBackup(config: Config, file: string): Promise<number> {
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
