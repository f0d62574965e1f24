import { defineConfig } from 'drizzle-kit';

/**
 * The PostgreSQL store's migrations, one folder per dialect (SQLite's stay in drizzle/):
 * `npx drizzle-kit generate --config drizzle.pg.config.ts --name <short_name>`.
 */
export default defineConfig({
  dialect: 'postgresql',
  schema: './src/db/schema/postgres.ts',
  out: './drizzle/pg',
});
