/**
 * The PostgreSQL schema: the same tables, columns and indexes as the SQLite one in ../schema/
 * (test/postgres/schemaParity.test.ts holds the two together), with PostgreSQL's types: `_raw` as
 * jsonb, times as timestamptz, keys as text. Migrations: `npx drizzle-kit generate --config
 * drizzle.pg.config.ts` into drizzle/pg/.
 */
export * from './deliveries.js';
export * from './inbox.js';
export * from './mirror.js';
export * from './outbox.js';
export * from './replicas.js';
export * from './sync.js';
