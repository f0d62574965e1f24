/**
 * Statements written once for both stores. A statement is a tagged template, `sql\`...\``: its
 * values become placeholders, rendered for the dialect that runs it (`?` on SQLite, `$n` on
 * PostgreSQL), never pasted into the text. What the two dialects spell differently is asked of
 * the {@link Dialect} (its `greatest`, a value's type where PostgreSQL must know it), and what only
 * one store can do is a capability (`dialect.capabilities`): code asks what a store can do, never
 * which store it is.
 *
 * A rule that reads and then writes is a {@link Script} (./script.ts), run in one transaction by
 * either adapter, each of which spells its own dialect.
 */

/** What a store can do that the other cannot: asked where behaviour must differ. */
export interface StoreCapabilities {
  /**
   * Several processes share the store and claim rows concurrently: `FOR UPDATE SKIP LOCKED`,
   * advisory locks, LISTEN/NOTIFY (PostgreSQL). Without it one process owns the store (SQLite: the
   * ownership lock), and a transaction sees no other writer.
   */
  readonly sharedByProcesses: boolean;
}

/** How a dialect spells what the statements need. */
export interface Dialect {
  readonly capabilities: StoreCapabilities;
  /** The placeholder of the `n`-th value (1-based). */
  placeholder(n: number, type: SqlType | undefined): string;
  /** A value as the driver binds it (SQLite binds no booleans: 1 and 0). */
  bind(value: unknown): unknown;
  /** The larger of two expressions (`MAX(a, b)` on SQLite, `GREATEST(a, b)` on PostgreSQL). */
  greatest(a: string, b: string): string;
  /** The smaller of two expressions. */
  least(a: string, b: string): string;
  /**
   * A statement taking `lock` until the transaction ends (PostgreSQL: an advisory lock held to the
   * commit); '' where one writer commits at a time. See {@link TransactionLock}.
   */
  transactionLock(lock: TransactionLock): string;
  /**
   * A table expression of the schema's indexes, columns `name` and `tbl` (the table): SQLite's
   * `sqlite_master`, PostgreSQL's `pg_indexes` in the current schema.
   */
  readonly indexCatalog: string;
  /**
   * Names the index a statement must read (after its table's name), or ''. SQLite's planner reckons
   * a row by its declared columns, not by the JSON each mirror row holds, so it scans a table for a
   * count a narrow index answers; PostgreSQL costs by pages and needs no hint.
   */
  indexedBy(index: string): string;
}

/**
 * The locks a transaction takes where writers commit concurrently: `feed`, after which its inserts
 * draw their ids in commit order (every writer of the change feed takes it); `reconcile`, after which
 * no other reconciliation pass writes until it ends.
 */
export type TransactionLock = 'feed' | 'reconcile';

/** A value's type where PostgreSQL cannot infer it from its place (`$1 IS NULL`, a bare SELECT). */
export type SqlType = 'text' | 'int4' | 'int8' | 'float8' | 'bool' | 'timestamptz';

/** A value with the type PostgreSQL must be told (see {@link SqlType}). */
class Typed {
  constructor(
    readonly value: unknown,
    readonly type: SqlType,
  ) {}
}

/** SQL spelled per dialect, around fragments written (and their values numbered) in text order. */
class Spelled {
  constructor(readonly spell: (dialect: Dialect, write: (part: Sql) => string) => string) {}
}

/** A statement (or a fragment of one): text pieces between values, as a template gives them. */
export class Sql {
  constructor(
    readonly strings: readonly string[],
    readonly values: readonly unknown[],
  ) {}

  /** The text and the values in the dialect's form. */
  render(dialect: Dialect): { text: string; values: unknown[] } {
    if (isFlat(this.values)) {
      const values = new Array<unknown>(this.values.length);
      for (let i = 0; i < values.length; i++) values[i] = dialect.bind(this.values[i]);
      return { text: flatText(this.strings, dialect), values };
    }
    const values: unknown[] = [];
    const text = this.write(dialect, values);
    return { text, values };
  }

  private write(dialect: Dialect, values: unknown[]): string {
    let text = this.strings[0] ?? '';
    this.values.forEach((value, i) => {
      text += spell(value, dialect, values) + (this.strings[i + 1] ?? '');
    });
    return text;
  }

  /** @internal a fragment inside another statement, its values numbered after the ones before. */
  writeInto(dialect: Dialect, values: unknown[]): string {
    return this.write(dialect, values);
  }
}

/** Whether `values` are all plain values (no fragment, no typed value): text follows from the pieces alone. */
function isFlat(values: readonly unknown[]): boolean {
  for (const v of values)
    if (typeof v === 'object' && (v instanceof Sql || v instanceof Spelled || v instanceof Typed))
      return false;
  return true;
}

/**
 * The text of a statement of plain values, per dialect and text pieces. A template's pieces are
 * one array per call site (and statements.ts keeps one per row count), so a hot statement is
 * spelled once and comes back as the same string: the prepared-statement cache then finds it
 * without hashing kilobytes of `VALUES` text again.
 */
const flatTexts = new WeakMap<Dialect, WeakMap<readonly string[], string>>();

function flatText(strings: readonly string[], dialect: Dialect): string {
  if (strings.length === 1) return strings[0] ?? '';
  let byPieces = flatTexts.get(dialect);
  if (byPieces === undefined) {
    byPieces = new WeakMap();
    flatTexts.set(dialect, byPieces);
  }
  let text = byPieces.get(strings);
  if (text === undefined) {
    text = strings[0] ?? '';
    for (let i = 1; i < strings.length; i++) text += dialect.placeholder(i, undefined) + strings[i];
    byPieces.set(strings, text);
  }
  return text;
}

function spell(value: unknown, dialect: Dialect, values: unknown[]): string {
  if (value instanceof Sql) return value.writeInto(dialect, values);
  if (value instanceof Spelled) return value.spell(dialect, (part) => part.writeInto(dialect, values));
  if (value instanceof Typed) {
    values.push(dialect.bind(value.value));
    return dialect.placeholder(values.length, value.type);
  }
  values.push(dialect.bind(value));
  return dialect.placeholder(values.length, undefined);
}

/** A statement: `${value}` binds a value; `${fragment}` (another `sql`, {@link raw}) is inlined. */
export function sql(strings: TemplateStringsArray, ...values: unknown[]): Sql {
  return new Sql(strings, values);
}

/** Text inlined as it is: only for text this code writes (column lists, guards), never for input. */
export function raw(text: string): Sql {
  return new Sql([text], []);
}

/** `value` bound with its type named on PostgreSQL: `$1::timestamptz` (SQLite: `?`). */
export function typed(value: unknown, type: SqlType): Typed {
  return new Typed(value, type);
}

/** The larger of two fragments, in the dialect's words. */
export function greatest(a: Sql, b: Sql): Sql {
  return new Sql(['', ''], [new Spelled((d, write) => d.greatest(write(a), write(b)))]);
}

/** The smaller of two fragments, in the dialect's words. */
export function least(a: Sql, b: Sql): Sql {
  return new Sql(['', ''], [new Spelled((d, write) => d.least(write(a), write(b)))]);
}

/** Fragments joined by `separator` (`, `, ` AND `). */
export function join(parts: readonly Sql[], separator: string): Sql {
  if (parts.length === 0) return raw('');
  return new Sql(['', ...parts.slice(1).map(() => separator), ''], parts);
}

/**
 * `LIMIT n`, the count written into the text rather than bound. SQLite plans a statement with the
 * value its LIMIT is bound to, so each run of a statement with a bound LIMIT prepared it again:
 * the claim's walk cost 11-15 us a run so, 2-4 us with the count written (`SELECT 1 LIMIT ?` 3 us,
 * `SELECT 1 LIMIT 4` 0.3 us). Each count is a text of its own, prepared once per handle. Only a
 * non-negative safe integer is written: anything else throws.
 */
export function limitRows(n: number): Sql {
  if (!Number.isSafeInteger(n) || n < 0) throw new RangeError(`LIMIT: ${n} is not a row count`);
  return raw(`LIMIT ${n}`);
}

/** Values bound one by one and separated by commas: the inside of an `IN (...)` list. */
export function valueList(values: readonly unknown[]): Sql {
  return join(
    values.map((v) => sql`${v}`),
    ', ',
  );
}

/** `fragment` where several processes share the store (`FOR UPDATE SKIP LOCKED`), nothing elsewhere. */
export function whenShared(fragment: Sql): Sql {
  return new Sql(
    ['', ''],
    [new Spelled((d, write) => (d.capabilities.sharedByProcesses ? write(fragment) : ''))],
  );
}

/** Takes `lock` until the transaction ends where writers commit concurrently (Dialect.transactionLock), nothing elsewhere. */
const transactionLock = (lock: TransactionLock): Sql =>
  new Sql(['', ''], [new Spelled((d) => d.transactionLock(lock))]);

/**
 * Makes the rest of the transaction draw ids in commit order where writers commit concurrently,
 * nothing elsewhere: a claimer of rows in id order then never sees id 6 while id 5 is still in flight.
 */
export const feedOrderLock = transactionLock('feed');

/** Makes other reconciliation passes wait for this transaction's end where replicas share the store. */
export const reconcilePassLock = transactionLock('reconcile');

/** `INDEXED BY index` where the dialect's planner needs telling (Dialect.indexedBy), nothing elsewhere. */
export const indexedBy = (index: string): Sql => new Sql(['', ''], [new Spelled((d) => d.indexedBy(index))]);

/** The schema's indexes as the dialect's catalog lists them: `name`, `tbl` (Dialect.indexCatalog). */
export const indexCatalog = new Sql(['', ''], [new Spelled((d) => d.indexCatalog)]);
