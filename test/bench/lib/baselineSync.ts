import http from 'node:http';
import got from 'got';
import { openDatabase } from '../../../src/db/open.js';
import { RESOURCE_FIELDS, type ResourceName } from '../../../src/operator/fields.js';

/** One list the baseline reads: its table and path. */
export interface BaselineList {
  table: Extract<ResourceName, 'projects' | 'issuances' | 'unit_operations'>;
  path: string;
}

/** The column value of a raw field, without any validation (what a bare loop would do). */
function column(value: unknown): string | number | null {
  if (value === undefined || value === null) return null;
  if (typeof value === 'boolean') return value ? 1 : 0;
  if (typeof value === 'object') return JSON.stringify(value);
  return value as string | number;
}

/**
 * The bare baseline of a full sync: a got GET loop over the pages, JSON.parse, and a prepared
 * INSERT ... ON CONFLICT DO UPDATE of the same columns, one transaction per page, into a fresh
 * database built by the same migrations. Returns the records written.
 */
export async function bareSync(
  url: string,
  file: string,
  lists: readonly BaselineList[],
  options: { pageSize: number; synchronous: 'full' | 'normal'; apiKey: string },
): Promise<number> {
  const database = openDatabase(file, { synchronous: options.synchronous });
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
      const cols = [
        ...fields.map((f) => f.name),
        '_raw',
        '_hash',
        '_first_seen_at',
        '_last_seen_at',
        ...(positioned ? ['_position'] : []),
      ];
      const quoted = cols.map((c) => `"${c}"`);
      const updates = quoted.filter((c) => c !== `"${key}"` && c !== '"_first_seen_at"');
      const upsert = database.sqlite.prepare(
        `INSERT INTO ${list.table} (${quoted.join(', ')}) VALUES (${cols.map(() => '?').join(', ')})
         ON CONFLICT("${key}") DO UPDATE SET ${updates.map((c) => `${c} = excluded.${c}`).join(', ')}`,
      );
      const writePage = database.sqlite.transaction((records: Record<string, unknown>[], offset: number) => {
        const at = new Date().toISOString();
        records.forEach((r, i) => {
          const params: (string | number | null)[] = fields.map((f) => column(r[f.name]));
          params.push(JSON.stringify(r), '', at, at);
          if (positioned) params.push(offset + i);
          upsert.run(params);
        });
      });
      for (let offset = 0; ; offset += options.pageSize) {
        const text = await client.get(`${url}${list.path}?limit=${options.pageSize}&offset=${offset}`).text();
        const records = JSON.parse(text) as Record<string, unknown>[];
        writePage(records, offset);
        total += records.length;
        if (records.length < options.pageSize) break;
      }
    }
  } finally {
    agent.destroy();
    database.close();
  }
  return total;
}
