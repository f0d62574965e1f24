import type pg from 'pg';
import { inPgTransaction } from '../../db/pg.js';
import type { CustodyIdBook } from '../custody.js';

/**
 * `custody_ids` on PostgreSQL: the statements SQLite's bookkeeping holds (../bookkeeping.ts), for
 * the custody sync (`pgCustodyIds`) and the store that ends an id's custody (./pgStore.ts).
 */

/** [at, kind, id]: the id left custody (once). */
export const END_CUSTODY_ID =
  'UPDATE custody_ids SET ended_at = $1 WHERE kind = $2 AND id = $3 AND ended_at IS NULL';

/** [wire spelling]: bodies of accepted or approved Tokenizations, as SQLite's outbox reads them. */
const TOKENIZATION_BODIES = `SELECT body FROM outbox
  WHERE lower("operationType") IN (lower($1), 'tokenization') AND state IN ('accepted', 'approved')`;

/** [kinds, ids, sources, at]: SQLite's INSERT OR IGNORE, the rows distinct already. */
const ADD = `INSERT INTO custody_ids (kind, id, source, added_at)
  SELECT u.kind, u.id, u.source, $4::timestamptz FROM unnest($1::text[], $2::text[], $3::text[]) AS u(kind, id, source)
  ON CONFLICT DO NOTHING`;

/** [kind]: ids still in custody; COLLATE "C" orders ids bytewise, as SQLite does. */
const ACTIVE = `SELECT id FROM custody_ids WHERE kind = $1 AND ended_at IS NULL ORDER BY added_at, id COLLATE "C"`;

export function pgCustodyIds(pool: pg.Pool): CustodyIdBook {
  return {
    async collect(wireSpelling, toAdd, at) {
      await inPgTransaction(pool, async (client) => {
        const { rows } = await client.query<{ body: string }>(TOKENIZATION_BODIES, [wireSpelling]);
        const adds = toAdd(rows.map((r) => r.body));
        if (adds.length === 0) return;
        await client.query(ADD, [
          adds.map((a) => a.kind),
          adds.map((a) => a.id),
          adds.map((a) => a.source),
          at,
        ]);
      });
    },
    async active(kind) {
      const { rows } = await pool.query<{ id: string }>(ACTIVE, [kind]);
      return rows.map((r) => r.id);
    },
  };
}
