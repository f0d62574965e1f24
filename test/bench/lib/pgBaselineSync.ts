import http from 'node:http';
import got from 'got';
import type pg from 'pg';
import { type FieldType, RESOURCE_FIELDS } from '../../../src/operator/fields.js';
import type { BaselineList } from './baselineSync.js';

/** The array type a field's column is sent as (the baseline's own unnest upsert). */
const ARRAY_TYPE: Record<FieldType, string> = {
  id: 'text[]',
  text: 'text[]',
  date: 'text[]',
  int: 'int8[]',
  number: 'float8[]',
  bool: 'bool[]',
  textList: 'jsonb[]',
};

/** The column value of a raw field, without any validation (what a bare loop would do). */
function column(type: FieldType, value: unknown): unknown {
  if (value === undefined || value === null) return null;
  if (type === 'textList' || typeof value === 'object') return JSON.stringify(value);
  return value;
}

/**
 * The bare PostgreSQL baseline of a full sync: a got GET loop over the pages, JSON.parse, and one
 * multi-row `INSERT ... SELECT FROM unnest(...) ON CONFLICT DO UPDATE` of the same columns per
 * page (autocommit), into a database built by the same migrations. Returns the records written.
 */
export async function barePgSync(
  url: string,
  pool: pg.Pool,
  lists: readonly BaselineList[],
  options: { pageSize: number; apiKey: string },
): Promise<number> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });
  const client = got.extend({
    agent: { http: agent },
    retry: { limit: 0 },
    timeout: { request: 60_000 },
    headers: { apikey: options.apiKey },
  });
  let total = 0;
  try {
    for (const list of lists) {
      const { fields, key } = RESOURCE_FIELDS[list.table];
      const positioned = list.table === 'unit_operations';
      const cols = [...fields.map((f) => f.name), '_raw', '_hash', ...(positioned ? ['_position'] : [])];
      const types = [
        ...fields.map((f) => ARRAY_TYPE[f.type]),
        'jsonb[]',
        'text[]',
        ...(positioned ? ['int8[]'] : []),
      ];
      const quoted = cols.map((c) => `"${c}"`);
      const updates = [...quoted.filter((c) => c !== `"${key}"`), '"_last_seen_at"'];
      const at = `$${types.length + 1}::timestamptz`;
      const upsert = `INSERT INTO ${list.table} (${quoted.join(', ')}, "_first_seen_at", "_last_seen_at")
        SELECT u.*, ${at}, ${at} FROM unnest(${types.map((t, i) => `$${i + 1}::${t}`).join(', ')}) AS u
        ON CONFLICT ("${key}") DO UPDATE SET ${updates.map((c) => `${c} = excluded.${c}`).join(', ')}`;
      for (let offset = 0; ; offset += options.pageSize) {
        const text = await client.get(`${url}${list.path}?limit=${options.pageSize}&offset=${offset}`).text();
        const records = JSON.parse(text) as Record<string, unknown>[];
        const arrays: unknown[][] = cols.map(() => []);
        records.forEach((r, i) => {
          fields.forEach((f, j) => {
            arrays[j]!.push(column(f.type, r[f.name]));
          });
          arrays[fields.length]!.push(JSON.stringify(r));
          arrays[fields.length + 1]!.push('');
          if (positioned) arrays[fields.length + 2]!.push(offset + i);
        });
        if (records.length > 0) await pool.query(upsert, [...arrays, new Date().toISOString()]);
        total += records.length;
        if (records.length < options.pageSize) break;
      }
    }
  } finally {
    agent.destroy();
  }
  return total;
}
