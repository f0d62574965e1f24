import { sqliteBackend } from '../../src/sqlite/mirror.js';
import { sqliteMirror } from './mirrorStores.js';
import { schemaDriftCases } from './schemaDrift.cases.js';

/** Upstream schema drift on SQLite, the harness context's file: no PostgreSQL needed. */

schemaDriftCases('sqlite', async (h, sink) => ({
  ...sqliteMirror(h.ctx),
  backend: sqliteBackend(h.ctx.database.sqlite, undefined, sink),
}));
