import { readSchema, type SchemaAnswer, type SchemaQuery } from '../mirror/shape/shapeReads.js';
import { type FieldDef, RESOURCE_FIELDS, type ResourceName } from '../operator/fields.js';
import type { ScriptStore } from '../store/script.js';
import { join, limitRows, raw, type Sql, sql, typed } from '../store/sql.js';

/**
 * All SQL of the read API over the mirror, for both stores. Lists use keyset pagination on the key
 * (stable while the mirror changes, unlike offsets); every filter is a bound parameter on a known
 * column.
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

/** The select lists of the mirror tables, built once each. */
const selectLists = new Map<ResourceName, Sql>();

/**
 * What a read selects from a mirror table: its fields and bookkeeping times, named rather than
 * `*` so neither store ships `_raw` (the whole record as received) to a reader that never shows it.
 */
function columnsOf(resource: ResourceName): Sql {
  let list = selectLists.get(resource);
  if (list === undefined) {
    const names = [...RESOURCE_FIELDS[resource].fields.map((f) => `"${f.name}"`), ...META_COLUMNS];
    if (resource.startsWith('custody_')) names.push('_custody_ended_at');
    list = raw(names.join(', '));
    selectLists.set(resource, list);
  }
  return list;
}

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
 * The mirror's reads as the API makes them, one request each, from the statements below on either
 * store: both answer the same values for the same rows (decodeRow), so the routes answer the same
 * JSON on either.
 */
export interface MirrorReads {
  list(request: ListRequest): Promise<ListPage>;
  /** The record with this key, removed or not; null when the mirror has never seen it. */
  get(resource: ResourceName, id: string): Promise<Record<string, unknown> | null>;
  /** The learned shape of the operator's records and its changes (`GET /v1/schema`). */
  schema(query: SchemaQuery): Promise<SchemaAnswer>;
}

/**
 * The statement of one page of a list (LIMIT asks one row more, to know if there is a next page),
 * and the date column the page is ordered by, if any. `byteOrder` is appended to a key or text
 * column compared or ordered, so it sorts in byte order as SQLite's BINARY does ('' where the
 * store's own collation already does: see {@link sortsInByteOrder}).
 */
export function listStatement(
  request: ListRequest,
  byteOrder = '',
): { statement: Sql; date: string | undefined } {
  const { fields, key } = RESOURCE_FIELDS[request.resource];
  const known = new Map(fields.map((f) => [f.name, f]));
  const where: Sql[] = [];
  // Keys and free text sort by collation. Numbers compare as numbers, and dates are checked as
  // YYYY-MM-DD on the way in (operator/schemas.ts), which every collation sorts as bytes: left as
  // they are, their ranges stay index ranges under any collation.
  const ordered = (column: string) => {
    const type = known.get(column)?.type;
    return raw(`"${column}"${type === 'id' || type === 'text' ? byteOrder : ''}`);
  };
  for (const filter of request.filters) {
    // Columns come from the field list, never from the request, so they can be quoted safely.
    if (!known.has(filter.column)) throw new Error(`unknown column ${filter.column}`);
    const column = filter.op === '=' ? raw(`"${filter.column}"`) : ordered(filter.column);
    where.push(sql`${column} ${raw(filter.op)} ${filter.value}`);
  }
  if (request.removed === 'false') where.push(sql`_removed_at IS NULL`);
  if (request.removed === 'only') where.push(sql`_removed_at IS NOT NULL`);
  const date = inDateOrder(request) ? request.dateOrder : undefined;
  if (date !== undefined && !known.has(date)) throw new Error(`unknown column ${date}`);
  if (request.after !== undefined) {
    // With a date order, a row value compares (date, key) in one index range.
    where.push(
      date !== undefined
        ? sql`(${ordered(date)}, ${ordered(key)}) > (${request.afterDate ?? ''}, ${request.after})`
        : sql`${ordered(key)} > ${request.after}`,
    );
  }
  const order = date !== undefined ? sql`${ordered(date)}, ${ordered(key)}` : ordered(key);
  const filtered = where.length ? sql` WHERE ${join(where, ' AND ')}` : raw('');
  const statement = sql`SELECT ${columnsOf(request.resource)} FROM ${raw(`"${request.resource}"`)}${filtered} ORDER BY ${order} ${limitRows(request.limit + 1)}`;
  return { statement, date };
}

/** The page of `raw` (up to limit + 1 rows, in the list's order), decoded. */
export function pageOf(
  request: ListRequest,
  rows: Record<string, unknown>[],
  date: string | undefined,
): ListPage {
  const { fields, key } = RESOURCE_FIELDS[request.resource];
  const more = rows.length > request.limit;
  const page = more ? rows.slice(0, request.limit) : rows;
  const last = page[page.length - 1];
  return {
    rows: page.map((r) => decodeRow(fields, r)),
    lastKey: more && last ? String(last[key]) : null,
    ...(more && last && date !== undefined ? { lastDate: String(last[date]) } : {}),
  };
}

/** The record with key `id` of a mirror table. */
export function recordStatement(resource: ResourceName, id: string): Sql {
  return sql`SELECT ${columnsOf(resource)} FROM ${raw(`"${resource}"`)} WHERE ${raw(`"${RESOURCE_FIELDS[resource].key}"`)} = ${id}`;
}

/** Texts whose byte order differs from a language collation's (case, punctuation, accents). */
const SAMPLE = ['a', 'B', 'b', 'A', '-1', '1', '_', 'Z9', 'z-', 'é', 'e', 'F', ' x'];

/**
 * Whether the store's own collation already sorts text in byte order, as SQLite's BINARY does
 * (PostgreSQL's `C`, `POSIX`, `C.UTF-8`): the sample as the store sorts it is compared with its
 * byte order. Then the lists' keyset comparisons and ORDER BY run on the indexes as they are;
 * under a language collation (`en_US.UTF-8`: `a` before `B`, `-` ignored) each one says
 * `COLLATE "C"`, the same pages at the cost of sorting the matching rows.
 */
export async function sortsInByteOrder(store: ScriptStore): Promise<boolean> {
  const values = join(
    SAMPLE.map((s) => sql`(${typed(s, 'text')})`),
    ', ',
  );
  const sorted = await store.read<{ s: string }>(
    sql`SELECT column1 AS s FROM (VALUES ${values}) AS v ORDER BY column1`,
  );
  const bytes = [...SAMPLE].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
  return sorted.every((row, i) => row.s === bytes[i]);
}

/**
 * The collation the text comparisons need (`''` or ` COLLATE "C"`, see {@link sortsInByteOrder}),
 * asked of the store once; asked again on the next call after a failure rather than remembered as one.
 */
export function byteOrderCollation(store: ScriptStore): () => Promise<string> {
  let asked: Promise<string> | undefined;
  return () => {
    asked ??= sortsInByteOrder(store).then(
      (same) => (same ? '' : ' COLLATE "C"'),
      (err: unknown) => {
        asked = undefined;
        throw err;
      },
    );
    return asked;
  };
}

/** The mirror's reads through a store (the mirror tables of src/db/schema/ or schema-pg/). */
export function mirrorReads(store: ScriptStore): MirrorReads {
  const collation = byteOrderCollation(store);
  return {
    async list(request) {
      const { statement, date } = listStatement(request, await collation());
      return pageOf(request, await store.read(statement), date);
    },
    async get(resource, id) {
      const [row] = await store.read(recordStatement(resource, id));
      return row ? decodeRow(RESOURCE_FIELDS[resource].fields, row) : null;
    },
    schema: (query) => readSchema((statement) => store.read(statement), query),
  };
}
