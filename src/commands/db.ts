import { backupStore, migrateStore } from '../app/openStores.js';
import type { Config } from '../config/config.js';

/** `vcu-sync db migrate`: applies pending migrations and says which state the schema is in. */
export async function runDbMigrate(config: Config): Promise<number> {
  process.stdout.write(`${await migrateStore(config)}\n`);
  return 0;
}

/** `vcu-sync db backup FILE`: an online backup, safe while the daemon writes (SQLite's file only). */
export async function runDbBackup(config: Config, file: string): Promise<number> {
  process.stdout.write(`${await backupStore(config, file)}\n`);
  return 0;
}
