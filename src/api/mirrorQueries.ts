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
    // SQLite's forms (0/1, a JSON array as text) or PostgreSQL's (boolean, jsonb already parsed).
    else if (f.type === 'bool') out[f.name] = v === 1 || v === true;
    else if (f.type === 'textList') out[f.name] = typeof v === 'string' ? (JSON.parse(v) as unknown) : v;
    else out[f.name] = v;
  }
  for (const m of META_COLUMNS) out[m] = row[m] ?? null;
  if ('_custody_ended_at' in row) out._custody_ended_at = row._custody_ended_at ?? null;
  return out;
}

/** One page of a list: its records as the API shows them, and where the next page starts. */
export interface ListPage {
  rows: Record<string, unknown>[];
  /** Key of the page's last record when there is a next page, else null. */
  lastKey: string | null;
  /** With a date order and a next page: the last record's date. */
  lastDate?: string;
}

/**
 * The mirror's reads as the API makes them, one request each: SQLite's below (synchronous, the
 * statements of today), PostgreSQL's in pgMirrorQueries.ts. Both answer the same values for the
 * same rows, so the routes answer the same JSON on either store.
 */
export interface MirrorReads {
  list(request: ListRequest): Promise<ListPage>;
  /** The record with this key, removed or not; null when the mirror has never seen it. */
  get(resource: ResourceName, id: string): Promise<Record<string, unknown> | null>;
}

/** How a dialect writes a list's SQL: its placeholders and the collation its text comparisons need. */
export interface ListDialect {
  /** The placeholder of the `n`th parameter (from 1). */
  param(n: number): string;
  /** Appended to a key or text column compared or ordered: byte order, as SQLite's BINARY (or ''). */
  byteOrder: string;
  /** What the statement selects. */
  columns: string;
}

const SQLITE_LIST: ListDialect = { param: () => '?', byteOrder: '', columns: '*' };

/**
 * The SQL of one page of a list and its parameters (LIMIT asks one row more, to know if there is
 * a next page), and the date column the page is ordered by, if any.
 */
export function listStatement(
  request: ListRequest,
  dialect: ListDialect,
): { sql: string; params: Array<string | number>; date: string | undefined } {
  const { fields, key } = RESOURCE_FIELDS[request.resource];
  const known = new Map(fields.map((f) => [f.name, f]));
  const where: string[] = [];
  const params: Array<string | number> = [];
  const p = (value: string | number) => {
    params.push(value);
    return dialect.param(params.length);
  };
  // Keys and free text sort by collation. Numbers compare as numbers, and dates are checked as
  // YYYY-MM-DD on the way in (operator/schemas.ts), which every collation sorts as bytes: left as
  // they are, their ranges stay index ranges under any collation.
  const ordered = (column: string) => {
    const type = known.get(column)?.type;
    return `"${column}"${type === 'id' || type === 'text' ? dialect.byteOrder : ''}`;
  };
  for (const filter of request.filters) {
    // Columns come from the field list, never from the request, so they can be quoted safely.
    if (!known.has(filter.column)) throw new Error(`unknown column ${filter.column}`);
    const column = filter.op === '=' ? `"${filter.column}"` : ordered(filter.column);
    where.push(`${column} ${filter.op} ${p(filter.value)}`);
  }
  if (request.removed === 'false') where.push('_removed_at IS NULL');
  if (request.removed === 'only') where.push('_removed_at IS NOT NULL');
  const date = inDateOrder(request) ? request.dateOrder : undefined;
  if (date !== undefined && !known.has(date)) throw new Error(`unknown column ${date}`);
  if (request.after !== undefined) {
    if (date !== undefined) {
      // A row value compares (date, key) in one index range.
      where.push(
        `(${ordered(date)}, ${ordered(key)}) > (${p(request.afterDate ?? '')}, ${p(request.after)})`,
      );
    } else {
      where.push(`${ordered(key)} > ${p(request.after)}`);
    }
  }
  const order = date !== undefined ? `${ordered(date)}, ${ordered(key)}` : ordered(key);
  const sql = `SELECT ${dialect.columns} FROM "${request.resource}" ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY ${order} LIMIT ${p(request.limit + 1)}`;
  return { sql, params, date };
}

/** The page of `raw` (up to limit + 1 rows, in the list's order), decoded. */
export function pageOf(
  request: ListRequest,
  raw: Record<string, unknown>[],
  date: string | undefined,
): ListPage {
  const { fields, key } = RESOURCE_FIELDS[request.resource];
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

export function listRecords(sqlite: Sqlite, request: ListRequest): ListPage {
  const { sql, params, date } = listStatement(request, SQLITE_LIST);
  return pageOf(request, sqlite.prepare(sql).all(...params) as Record<string, unknown>[], date);
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

/** The mirror's reads on SQLite: the statements above, answered at once. */
export function sqliteMirrorReads(sqlite: Sqlite): MirrorReads {
  return {
    list: async (request) => listRecords(sqlite, request),
    get: async (resource, id) => getRecord(sqlite, resource, id),
  };
}
