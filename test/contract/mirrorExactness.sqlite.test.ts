import { mirrorExactnessCases } from './mirrorExactness.cases.js';
import { sqliteMirror } from './mirrorStores.js';

/** The mirror's exactness contract on SQLite, the harness context's file: no PostgreSQL needed. */

mirrorExactnessCases('sqlite', async (h) => sqliteMirror(h.ctx));
