import { filterIndexesCases } from './filterIndexes.cases.js';
import { type MirrorUnderTest, sqliteMirror } from './mirrorStores.js';

/**
 * The filter indexes' contract on SQLite, the harness context's file (a `vcu-sync` child writes the
 * same file). Its catalog: `pragma_index_list` and `pragma_index_info`.
 */

async function definitions(m: MirrorUnderTest, table: string) {
  const out: Record<string, { columns: string[]; text: string }> = {};
  const list = await m.query('SELECT name, "unique", partial FROM pragma_index_list($1)', [table]);
  for (const index of list) {
    const name = String(index.name);
    const columns = (await m.query('SELECT name FROM pragma_index_info($1) ORDER BY seqno', [name])).map(
      (r) => String(r.name),
    );
    out[name] = { columns, text: `unique=${index.unique} partial=${index.partial} (${columns.join(', ')})` };
  }
  return out;
}

filterIndexesCases('sqlite', {
  open: async (h) => sqliteMirror(h.ctx),
  childEnv: (h) => ({ VCU_SYNC_DB: h.ctx.database.path }),
  definitions,
});
