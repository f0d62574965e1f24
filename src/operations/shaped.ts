import { type Dialect, Sql } from '../store/sql.js';

/**
 * Statements run once per sent row (the claim, the settle), rendered once per dialect from their
 * builder and bound per call by name. The rule stays written once, over `sql`; only its rendering
 * is kept: walking the nested fragments (SET list, guards, columns) on every call cost SQLite more
 * CPU than running the statement did.
 */

/** Stands for the value of that name while a shape is rendered. */
class Slot {
  constructor(readonly name: string) {}
}

type Shape = { text: string; slots: string[] };

/** A shaped statement with its values: rendered from the dialect's cached shape. */
class ShapedSql extends Sql {
  constructor(
    private readonly shapeOf: (dialect: Dialect) => Shape,
    private readonly given: Readonly<Record<string, unknown>>,
  ) {
    super([], []);
  }

  override render(dialect: Dialect): { text: string; values: unknown[] } {
    const { text, slots } = this.shapeOf(dialect);
    return { text, values: slots.map((name) => dialect.bind(this.given[name])) };
  }

  /** A shape is a whole statement: inside another, its values would be lost. */
  override writeInto(): string {
    throw new Error('a shaped statement cannot be a fragment of another');
  }
}

/**
 * The statement `build` writes, rendered once per dialect: `build` must take every value from its
 * argument and shape nothing on them (a statement of another shape is another `shaped`).
 */
export function shaped<K extends string>(
  build: (values: Readonly<Record<K, unknown>>) => Sql,
): (values: Readonly<Record<K, unknown>>) => Sql {
  const shapes = new Map<Dialect, Shape>();
  const shapeOf = (dialect: Dialect): Shape => {
    let shape = shapes.get(dialect);
    if (shape === undefined) {
      const slots = new Proxy({} as Record<K, unknown>, { get: (_, name) => new Slot(String(name)) });
      const { text, values } = build(slots).render(dialect);
      shape = { text, slots: values.map((value) => (value as Slot).name) };
      shapes.set(dialect, shape);
    }
    return shape;
  };
  return (values) => new ShapedSql(shapeOf, values);
}

/** Most counts {@link shapedPerLimit} keeps shapes for: claims ask for at most a few slots' worth. */
const LIMITS_KEPT = 256;

/**
 * A shaped statement per LIMIT, the count written into its text (store/sql.ts limitRows): `make`
 * builds the statement of one count, once, when that count is first asked for.
 */
export function shapedPerLimit<S>(make: (limit: number) => S): (limit: number) => S {
  const made = new Map<number, S>();
  return (limit) => {
    const kept = made.get(limit);
    if (kept !== undefined) return kept;
    // The oldest count made goes first: a cap, not a cache policy (claims ask for a few counts).
    if (made.size >= LIMITS_KEPT) made.delete(made.keys().next().value as number);
    const statement = make(limit);
    made.set(limit, statement);
    return statement;
  };
}
