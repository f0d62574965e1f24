import type pg from 'pg';
import { quoteIdent as q } from '../mirror/statements.js';
import { iso } from '../operations/pgRows.js';
import { RESOURCE_FIELDS, type ResourceName } from '../operator/fields.js';
import { decodeRow, type ListDialect, listStatement, type MirrorReads, pageOf } from './mirrorQueries.js';

/**
 * The read API's mirror reads on PostgreSQL: SQLite's statements (mirrorQueries.ts listStatement)
 * with `$n` placeholders, selecting each column in the form SQLite's row has, so decodeRow and the
 * routes answer the same JSON: int8 as a JS number (float8: exact far past any id), times as
 * SQLite's ISO text (ms, `Z`); booleans and jsonb lists decode as they come.
 */

/** The select list of a mirror table (built once per table). */
const selectLists = new Map<ResourceName, string>();

function columnsOf(resource: ResourceName): string {
  let list = selectLists.get(resource);
  if (list === undefined) {
    const fields = RESOURCE_FIELDS[resource].fields.map((f) =>
      f.type === 'int' ? `${q(f.name)}::float8 AS ${q(f.name)}` : q(f.name),
    );
    const times = ['_first_seen_at', '_last_seen_at', '_removed_at'];
    if (resource.startsWith('custody_')) times.push('_custody_ended_at');
    list = [...fields, ...times.map((t) => `${iso(t)} AS ${t}`)].join(', ');
    selectLists.set(resource, list);
  }
  return list;
}

/**
 * Whether the database's own collation already sorts text in byte order, as SQLite's BINARY does
 * (`C`, `POSIX`, `C.UTF-8`): the sample's order under it and under "C" are compared, whatever the
 * server's version or locale provider. Then the lists' keyset comparisons and ORDER BY run on the
 * indexes as they are; under a language collation (`en_US.UTF-8`: `a` before `B`, `-` ignored)
 * each one says `COLLATE "C"`, the same pages at the cost of sorting the matching rows.
 */
export async function sortsInByteOrder(pool: pg.Pool): Promise<boolean> {
  const { rows } = await pool.query<{ same: boolean }>(
    `SELECT array_agg(s ORDER BY s) = array_agg(s ORDER BY s COLLATE "C") AS same
     FROM unnest(ARRAY['a', 'B', 'b', 'A', '-1', '1', '_', 'Z9', 'z-', 'é', 'e', 'F', ' x']) AS s`,
  );
  return rows[0]?.same === true;
}

/** The mirror's reads on the PostgreSQL mirror tables (src/db/schema-pg/mirror.ts). */
export function pgMirrorReads(pool: pg.Pool): MirrorReads {
  let byteOrder: Promise<string> | undefined;
  const collation = () => {
    byteOrder ??= sortsInByteOrder(pool).then(
      (same) => (same ? '' : ' COLLATE "C"'),
      (err: unknown) => {
        // Asked again on the next request rather than remembered as a failure.
        byteOrder = undefined;
        throw err;
      },
    );
    return byteOrder;
  };
  return {
    async list(request) {
      const dialect: ListDialect = {
        param: (n) => `$${n}`,
        byteOrder: await collation(),
        columns: columnsOf(request.resource),
      };
      const { sql, params, date } = listStatement(request, dialect);
      const { rows } = await pool.query<Record<string, unknown>>(sql, params);
      return pageOf(request, rows, date);
    },
    async get(resource, id) {
      const { fields, key } = RESOURCE_FIELDS[resource];
      const { rows } = await pool.query<Record<string, unknown>>(
        `SELECT ${columnsOf(resource)} FROM ${q(resource)} WHERE ${q(key)} = $1`,
        [id],
      );
      const row = rows[0];
      return row ? decodeRow(fields, row) : null;
    },
  };
}
