/**
 * The API's fields are camelCase (docs/api.md "Field names"). A few stored columns were shown under
 * their snake_case names before that choice; clients read them, so each is shown under both names
 * until the next major version: the camelCase one, and the snake_case one as a deprecated alias
 * with the same value. Pure: the shapes' mappers (outbox/entry.ts, feed/feedReads.ts) and their
 * schemas (api/schemas/) use these, so a value and its document name the same twins.
 */

/** `next_attempt_at` → `nextAttemptAt`, as a type. */
export type CamelCase<S extends string> = S extends `${infer Head}_${infer Tail}`
  ? `${Head}${Capitalize<CamelCase<Tail>>}`
  : S;

/** `T` with the camelCase twin of each of its `Aliased` fields, of the same type. */
export type WithCamelTwins<T, Aliased extends keyof T & string> = T & {
  [K in Aliased as CamelCase<K>]: T[K];
};

/** `next_attempt_at` → `nextAttemptAt`. */
export function camelCase<S extends string>(name: S): CamelCase<S> {
  return name.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase()) as CamelCase<S>;
}

/** The version that drops the snake_case aliases: the next major one. */
export const ALIASES_REMOVED_IN = 'the next major version';

/** What the document says of an alias. */
export function aliasDescription(twin: string): string {
  return `alias of ${twin}; removed in ${ALIASES_REMOVED_IN}`;
}

/**
 * A copy of `row` where each aliased field is preceded by its camelCase twin (same value); the
 * other fields stay where they are. `twins` maps each aliased name to its twin (see {@link twinsOf}).
 */
export function withCamelTwins<T extends object, Aliased extends keyof T & string>(
  row: T,
  twins: Twins<Aliased>,
): WithCamelTwins<T, Aliased> {
  const byName: ReadonlyMap<string, string> = twins;
  const out: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(row)) {
    const twin = byName.get(name);
    if (twin !== undefined) out[twin] = value;
    out[name] = value;
  }
  return out as WithCamelTwins<T, Aliased>;
}

/** Each aliased snake_case name with its camelCase twin. */
export type Twins<Aliased extends string> = ReadonlyMap<Aliased, CamelCase<Aliased>>;

/** Each snake_case name with its camelCase twin, for {@link withCamelTwins}. */
export function twinsOf<Aliased extends string>(names: readonly Aliased[]): Twins<Aliased> {
  return new Map(names.map((n) => [n, camelCase(n)]));
}
