import pg from 'pg';
import type { Sql } from '../store/sql.js';
import { postgresDialect } from './scripts.js';

/**
 * Statements with their values written in as literals, for one simple-protocol message holding
 * several (node-pg sends a statement with parameters alone, and waits for its answer before the
 * next): a group's settles and claims travel as one message, one round trip instead of one each.
 * A quoted literal is typed by its place as an unbound parameter is (both are `unknown` to the
 * server), so the statement means the same; values are escaped by pg's escapeLiteral.
 */

/** One value as a literal: NULL, an ARRAY[...] of literals (typed by the statement's cast), or quoted text. */
export function literal(value: unknown): string {
  if (value === null || value === undefined) return 'NULL';
  if (Array.isArray(value)) return `ARRAY[${value.map(literal).join(', ')}]`;
  if (value instanceof Date) return pg.escapeLiteral(value.toISOString());
  return pg.escapeLiteral(String(value));
}

/**
 * `statement` as text with every `$n` replaced by its value's literal. Only for statements whose
 * own text has no `$` (the dispatcher's settle and claim: their text is code, values are values).
 */
export function inlined(statement: Sql): string {
  const { text, values } = statement.render(postgresDialect);
  return text.replace(/\$(\d+)/g, (_, n: string) => literal(values[Number(n) - 1]));
}
