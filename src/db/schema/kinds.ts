import type { $Type, ColumnBuilderBase, NotNull } from 'drizzle-orm';

/**
 * The words the tables are written in, once for both stores (outbox.ts, inbox.ts, ...): each
 * table module is a function of a dialect's column kinds, and sqlite.ts / postgres.ts hand it their
 * own and build drizzle tables from the result. A kind names what a column means (a time, a row
 * id, a 64-bit integer); each dialect says how it stores that (SQLite: ISO text, INTEGER;
 * PostgreSQL: timestamptz read as strings, bigint read as numbers), so rows read the same on both.
 * Columns take their name from their key (drizzle names a nameless builder after it).
 */

/**
 * What the table modules apply on a column of any dialect: drizzle's builders share it (a method, so
 * each dialect's builder type fits here).
 */
export interface Builder extends ColumnBuilderBase {
  notNull(): NotNull<this>;
}

/** The drizzle builder type each kind gives in one dialect (the type argument of ColumnKinds). */
export interface ColumnTypes {
  text: Builder;
  uniqueText: Builder;
  int: Builder;
  int64: Builder;
  real: Builder;
  json: Builder;
  bool: Builder;
  at: Builder;
  rowId: Builder;
  key: Builder;
  count: Builder;
  flag: Builder;
  /** A built column another table's foreign key points at. */
  column: unknown;
}

/** The types of a dialect's `ColumnKinds`, from its plain kinds (those without parameters). */
export type KindTypes<Plain extends Record<string, () => Builder>, Column> = {
  [K in keyof Plain]: ReturnType<Plain[K]>;
} & { column: Column };

/** What a foreign key does when the row it points at is deleted. */
export type OnDelete = 'cascade' | 'set null';

/**
 * One dialect's column kinds. Only `notNull()` (the same on every drizzle builder) is applied on top
 * in the table modules; whatever else a column needs (a default, a key, a type) is in its kind.
 */
export interface ColumnKinds<C extends ColumnTypes> {
  text(): C['text'];
  /**
   * Text NOT NULL holding one of `T` (a state name): typed only, no CHECK constraint, so a new
   * state needs no migration. A kind rather than `.$type<T>().notNull()` in the table module:
   * chained on a generic builder there, the second call's result drops the first's type.
   */
  state<T extends string>(): NotNull<$Type<C['text'], T>>;
  /** Text NOT NULL with a unique constraint named `<table>_<column>_unique`. */
  uniqueText(): C['uniqueText'];
  /** A 32-bit count or status code. */
  int(): C['int'];
  /** A 64-bit integer (row ids, positions, offsets), read as a JS number: none comes near 2^53. */
  int64(): C['int64'];
  real(): C['real'];
  /** JSON: text on SQLite, jsonb on PostgreSQL (so readers there can use jsonb operators). */
  json(): C['json'];
  bool(): C['bool'];
  /** A point in time, read and written as an ISO string on both stores. */
  at(): C['at'];
  /** The table's 64-bit row id, assigned by the store in insert order. */
  rowId(): C['rowId'];
  /** A text primary key. */
  key(): C['key'];
  /** A 32-bit counter: NOT NULL, 0 until counted. */
  count(): C['count'];
  /** A boolean: NOT NULL, false until set. */
  flag(): C['flag'];
  /** A 64-bit reference to another table's row id. */
  reference(parent: () => C['column'], onDelete: OnDelete): C['int64'];
}

/** An index over columns of the table, in the order given (the order queries walk it in). */
export interface IndexSpec<K extends string> {
  name: string;
  on: readonly [K, ...K[]];
  unique: boolean;
  /** Partial: only the rows a condition keeps (in SQL both dialects read alike). */
  where?: string;
}

export const index = <K extends string>(name: string, ...on: [K, ...K[]]): IndexSpec<K> => ({
  name,
  on,
  unique: false,
});

/** An index of only the rows `where` keeps (SQL both dialects read alike). */
export const partialIndex = <K extends string>(
  name: string,
  where: string,
  ...on: [K, ...K[]]
): IndexSpec<K> => ({ name, on, unique: false, where });

/** An index of the mirror rows that are live (`_removed_at IS NULL`): what the sync's counts read. */
export const liveIndex = <K extends string>(name: string, ...on: [K, ...K[]]): IndexSpec<K> =>
  partialIndex(name, '_removed_at IS NULL', ...on);

export const uniqueIndex = <K extends string>(name: string, ...on: [K, ...K[]]): IndexSpec<K> => ({
  name,
  on,
  unique: true,
});

/** One table as both dialects build it: its columns, indexes and (composite) primary key. */
export interface TableSpec<N extends string, Cols extends Record<string, ColumnBuilderBase>> {
  name: N;
  columns: Cols;
  indexes: readonly IndexSpec<keyof Cols & string>[];
  /** A primary key over several columns; a single-column key is a kind (`rowId`, `key`). */
  primaryKey?: readonly [keyof Cols & string, ...(keyof Cols & string)[]];
}

export const table = <N extends string, Cols extends Record<string, ColumnBuilderBase>>(
  name: N,
  columns: Cols,
  keys: Partial<Pick<TableSpec<N, Cols>, 'indexes' | 'primaryKey'>> = {},
): TableSpec<N, Cols> => ({ name, columns, indexes: keys.indexes ?? [], primaryKey: keys.primaryKey });

/**
 * The built columns an index or key names, in order (a dialect's table builder looks them up in its
 * extra-config columns; mirror tables' columns come from a list, so a wrong name fails at load).
 */
export function columnsNamed<Column>(
  table: object,
  names: readonly [string, ...string[]],
): [Column, ...Column[]] {
  const byName = table as Record<string, Column | undefined>;
  const named = (name: string): Column => {
    const column = byName[name];
    if (!column) throw new Error(`${name}: no such column`);
    return column;
  };
  const [first, ...rest] = names;
  return [named(first), ...rest.map(named)];
}
