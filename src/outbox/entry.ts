import { type Masker, maskPersonal, personalMasker, personalValuesOf } from '../operations/personal.js';
import type { AttemptRow, OperationRow } from '../operations/rows.js';
import { isSensitiveKey, maskDeep } from '../redact.js';

/**
 * How an outbox row is shown to people and internal apps (CLI, read API): the stored columns,
 * with `body` and `response` parsed and their personal fields masked (they are for the operator
 * only). Text columns are stored masked already; they are masked again with the row's own values
 * here, so a row stored by an older version is not shown as it was.
 */
export type OutboxEntry = Omit<OperationRow, 'body' | 'response'> & {
  body: unknown;
  response: unknown;
  attempt_log?: AttemptRow[];
};

function parsedBody(text: string): unknown {
  try {
    const value: unknown = JSON.parse(text);
    return value && typeof value === 'object' && !Array.isArray(value)
      ? maskPersonal(value as Record<string, unknown>)
      : value;
  } catch {
    return text;
  }
}

function parsedResponse(text: string | null, mask: Masker): unknown {
  if (text === null) return null;
  try {
    return maskDeep(JSON.parse(text), { key: isSensitiveKey, text: mask });
  } catch {
    return mask(text);
  }
}

const masked = (text: string | null, mask: Masker) => (text === null ? null : mask(text));

/** The row as shown; `attempts` (the list) only when given. */
export function toEntry(row: OperationRow, attempts?: AttemptRow[]): OutboxEntry {
  const mask = personalMasker(personalValuesOf(row.body));
  const entry: OutboxEntry = {
    ...row,
    body: parsedBody(row.body),
    response: parsedResponse(row.response, mask),
    last_error: masked(row.last_error, mask),
    decision_reason: masked(row.decision_reason, mask),
  };
  if (attempts) entry.attempt_log = attempts.map((a) => ({ ...a, error: masked(a.error, mask) }));
  return entry;
}
