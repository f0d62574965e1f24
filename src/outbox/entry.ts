import { maskPersonal } from './personal.js';
import type { AttemptRow, OutboxRow } from './queries.js';

/**
 * How an outbox row is shown to people and internal apps (CLI, read API): the stored columns,
 * with `body` and `response` parsed and their personal fields masked (they are for the operator only).
 */
export type OutboxEntry = Omit<OutboxRow, 'body' | 'response'> & {
  body: unknown;
  response: unknown;
  attempt_log?: AttemptRow[];
};

function parsedMasked(text: string | null): unknown {
  if (text === null) return null;
  try {
    const value: unknown = JSON.parse(text);
    return value && typeof value === 'object' && !Array.isArray(value)
      ? maskPersonal(value as Record<string, unknown>)
      : value;
  } catch {
    return text;
  }
}

/** The row as shown; `attempts` (the list) only when given. */
export function toEntry(row: OutboxRow, attempts?: AttemptRow[]): OutboxEntry {
  const entry: OutboxEntry = { ...row, body: parsedMasked(row.body), response: parsedMasked(row.response) };
  if (attempts) entry.attempt_log = attempts;
  return entry;
}
