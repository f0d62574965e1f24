import type { Sqlite } from '../db/open.js';
import { type FieldDef, RESOURCE_FIELDS, type ResourceName } from '../operator/fields.js';

/**
 * All SQL of the read API over the mirror. Lists use keyset pagination on the key (stable while
 * the mirror changes, unlike offsets); every filter is a bound parameter on a known column.
 */

/** A filter on one column: equality, or a date range. */
export type ColumnFilter = { column: string; op: '=' | '>=' | '<='; value: string | number };

export interface ListRequest {
  resource: ResourceName;
  filters: ColumnFilter[];
  removed: 'false' | 'true' | 'only';
  /** Key after which the page starts (exclusive). */
  after: string | undefined;
  /** With a date order: the date of the `after` record (the page starts after (date, key)). */
  afterDate?: string | undefined;
  limit: number;
  /**
   * A date column: when a filter bounds it, the list is ordered by it, then by key, so a date
   * range reads as one index range instead of a scan of the whole table (default: key order).
   */
  dateOrder?: string | undefined;
}

/** Whether the request is in date order: it names a date column and a filter bounds it. */
export function inDateOrder(request: Pick<ListRequest, 'filters' | 'dateOrder'>): boolean {
  const column = request.dateOrder;
  return column !== undefined && request.filters.some((f) => f.column === column && f.op !== '=');
}

const META_COLUMNS = ['_first_seen_at', '_last_seen_at', '_removed_at'];

/** A mirror row as the API shows it: interface fields typed as the interface says, plus bookkeeping. */
export function decodeRow(
  fields: readonly FieldDef[],
  row: Record<string, unknown>,
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const f of fields) {
    const v = row[f.name];
    if (v === null || v === undefined) out[f.name] = null;
    else if (f.type === 'bool') out[f.name] = v === 1;
    else if (f.type === 'textList') out[f.name] = JSON.parse(String(v)) as unknown;
    else out[f.name] = v;
  }
  for (const m of META_COLUMNS) out[m] = row[m] ?? null;
  if ('_custody_ended_at' in row) out._custody_ended_at = row._custody_ended_at ?? null;
  return out;
}

export function listRecords(
  sqlite: Sqlite,
  request: ListRequest,
): { rows: Record<string, unknown>[]; lastKey: string | null; lastDate?: string } {
  const { fields, key } = RESOURCE_FIELDS[request.resource];
  const known = new Set(fields.map((f) => f.name));
  const where: string[] = [];
  const params: Array<string | number> = [];
  for (const filter of request.filters) {
    // Columns come from the field list, never from the request, so they can be quoted safely.
    if (!known.has(filter.column)) throw new Error(`unknown column ${filter.column}`);
    where.push(`"${filter.column}" ${filter.op} ?`);
    params.push(filter.value);
  }
  if (request.removed === 'false') where.push('_removed_at IS NULL');
  if (request.removed === 'only') where.push('_removed_at IS NOT NULL');
  const date = inDateOrder(request) ? request.dateOrder : undefined;
  if (date !== undefined && !known.has(date)) throw new Error(`unknown column ${date}`);
  if (request.after !== undefined) {
    if (date !== undefined) {
      // A row value compares (date, key) in one index range.
      where.push(`("${date}", "${key}") > (?, ?)`);
      params.push(request.afterDate ?? '', request.after);
    } else {
      where.push(`"${key}" > ?`);
      params.push(request.after);
    }
  }
  const order = date !== undefined ? `"${date}", "${key}"` : `"${key}"`;
  const sql = `SELECT * FROM "${request.resource}" ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY ${order} LIMIT ?`;
  const raw = sqlite.prepare(sql).all(...params, request.limit + 1) as Record<string, unknown>[];
  const more = raw.length > request.limit;
  const page = more ? raw.slice(0, request.limit) : raw;
  const rows = page.map((r) => decodeRow(fields, r));
  const last = page[page.length - 1];
  return {
    rows,
    lastKey: more && last ? String(last[key]) : null,
    ...(more && last && date !== undefined ? { lastDate: String(last[date]) } : {}),
  };
}

export function getRecord(
  sqlite: Sqlite,
  resource: ResourceName,
  id: string,
): Record<string, unknown> | null {
  const { fields, key } = RESOURCE_FIELDS[resource];
  const row = sqlite.prepare(`SELECT * FROM "${resource}" WHERE "${key}" = ?`).get(id) as
    | Record<string, unknown>
    | undefined;
  return row ? decodeRow(fields, row) : null;
}
