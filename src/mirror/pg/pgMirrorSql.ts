import type { FieldType } from '../../operator/fields.js';
import type { TableDef } from '../resources.js';
import type { RowWrite } from './batchPlan.js';

/**
 * The SQL of one mirror table on PostgreSQL (SQLite's is ../mirrorTable.ts), built once per table.
 * Multi-row: each statement takes whole columns as arrays (`unnest($1::text[], ...)`), so a batch
 * costs the same few round trips whatever its size. Identifiers come from the field lists in
 * operator/fields.ts, never from input.
 */

export const q = (name: string) => `"${name.replaceAll('"', '""')}"`;

/** The array type a field's column is sent as. */
export const ARRAY_TYPE: Record<FieldType, string> = {
  id: 'text[]',
  text: 'text[]',
  date: 'text[]',
  int: 'int8[]',
  number: 'float8[]',
  bool: 'bool[]',
  textList: 'jsonb[]',
};

/** A column value as SQLite stores it, as PostgreSQL's column takes it (bool 0/1 → boolean). */
function toPg(type: FieldType, value: string | number | null): string | number | boolean | null {
  if (value === null) return null;
  if (type === 'bool') return value === 1;
  return value;
}

export interface PgMirrorSql {
  /** [keys, resource]: rows (key, hash, removed, position, custody ended) and seen keys (seen). */
  lookup: string;
  /** [keys]: the same without the seen set (a scan that does not track it). */
  lookupUntracked: string;
  /**
   * Writes `rows`, parameters numbered from `$first`: rows that exist are updated (their first-seen
   * time kept); new ones are inserted without ON CONFLICT's speculative insertion, since the run's
   * lock leaves no other writer of the table.
   */
  upsert(
    first: number,
    rows: readonly RowWrite[],
    at: string,
    existing: boolean,
  ): { sql: string; params: unknown[] };
  /** [keys, positions]. */
  positions: string | null;
  /** [] → n. */
  liveCount: string;
  hasLive: string;
  /** [resource] → n. */
  unseenCount: string;
  /** [resource, at] → key. */
  tombstone: string;
  /** [from, to] → key, hash, position. */
  overlap: string | null;
  /** [at, key] → rowCount. */
  endCustody: string | null;
}

const cache = new Map<string, PgMirrorSql>();

/** The SQL of a mirror table (built on first use). */
export function pgMirrorSql(def: TableDef): PgMirrorSql {
  let sql = cache.get(def.table);
  if (!sql) {
    sql = build(def);
    cache.set(def.table, sql);
  }
  return sql;
}

function build(def: TableDef): PgMirrorSql {
  const t = q(def.table);
  const k = q(def.key);
  const cols = def.fields.map((f) => q(f.name));
  const extra = def.positioned ? ['_position'] : [];
  const insertCols = [...cols, '_raw', '_hash', '_first_seen_at', '_last_seen_at', ...extra];
  const types = [
    ...def.fields.map((f) => ARRAY_TYPE[f.type]),
    'jsonb[]',
    'text[]',
    ...extra.map(() => 'int8[]'),
  ];
  const sets = [
    ...cols.filter((c) => c !== k).map((c) => `${c} = excluded.${c}`),
    '_raw = excluded._raw',
    '_hash = excluded._hash',
    '_last_seen_at = excluded._last_seen_at',
    '_removed_at = NULL',
    ...(def.custody ? ['_custody_ended_at = NULL'] : []),
    ...extra.map((c) => `${c} = excluded.${c}`),
  ];
  const unseen = `_removed_at IS NULL AND NOT EXISTS (SELECT 1 FROM sync_seen s WHERE s.resource = $1 AND s.record_id = ${t}.${k})`;
  // Only rows that exist come back (a first sync's batch reads none), and the keys the scan saw.
  const rowsOf = `SELECT m.${k} AS key, m._hash AS hash, m._removed_at IS NOT NULL AS removed,
        ${def.positioned ? 'm._position' : 'NULL::int8'} AS position,
        ${def.custody ? 'm._custody_ended_at IS NOT NULL' : 'false'} AS ended, false AS seen
      FROM ${t} m WHERE m.${k} = ANY($1::text[])`;
  return {
    lookup: `${rowsOf} UNION ALL SELECT record_id, NULL, false, NULL, false, true FROM sync_seen
      WHERE resource = $2 AND record_id = ANY($1::text[])`,
    lookupUntracked: rowsOf,
    upsert(first, rows, at, existing) {
      const columns: unknown[][] = insertCols.map(() => []);
      const n = def.fields.length;
      for (const row of rows) {
        for (let i = 0; i < n; i++) columns[i]!.push(toPg(def.fields[i]!.type, row.values[i] ?? null));
        columns[n]!.push(row.raw);
        columns[n + 1]!.push(row.hash);
        if (def.positioned) columns[n + 2]!.push(row.position);
      }
      // The two times are the batch's, one parameter each rather than an array.
      const arrays = [...columns.slice(0, n + 2), ...(def.positioned ? [columns[n + 2]!] : [])];
      const args = types.map((type, i) => `$${first + i}::${type}`);
      const atParam = `$${first + types.length}::timestamptz`;
      const select = [
        ...insertCols.slice(0, n + 2).map((_, i) => `u.c${i}`),
        atParam,
        atParam,
        ...(def.positioned ? [`u.c${n + 2}`] : []),
      ];
      const names = types.map((_, i) => `c${i}`).join(', ');
      return {
        sql: `INSERT INTO ${t} (${insertCols.join(', ')})
          SELECT ${select.join(', ')} FROM unnest(${args.join(', ')}) AS u(${names})
          ${existing ? `ON CONFLICT (${k}) DO UPDATE SET ${sets.join(', ')}` : ''}`,
        params: [...arrays, at],
      };
    },
    positions: def.positioned
      ? `UPDATE ${t} SET _position = u.p FROM unnest($1::text[], $2::int8[]) AS u(k, p) WHERE ${t}.${k} = u.k`
      : null,
    liveCount: `SELECT count(*)::int8 AS n FROM ${t} WHERE _removed_at IS NULL`,
    hasLive: `SELECT EXISTS (SELECT 1 FROM ${t} WHERE _removed_at IS NULL) AS live`,
    unseenCount: `SELECT count(*)::int8 AS n FROM ${t} WHERE ${unseen}`,
    tombstone: `UPDATE ${t} SET _removed_at = $2 WHERE ${unseen} RETURNING ${k} AS key`,
    overlap: def.positioned
      ? `SELECT ${k} AS key, _hash AS hash, _position AS position FROM ${t}
         WHERE _removed_at IS NULL AND _position >= $1 AND _position < $2`
      : null,
    endCustody: def.custody
      ? `UPDATE ${t} SET _custody_ended_at = $1 WHERE ${k} = $2 AND _custody_ended_at IS NULL`
      : null,
  };
}
