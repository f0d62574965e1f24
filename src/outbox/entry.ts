import { twinsOf, type WithCamelTwins, withCamelTwins } from '../common/fieldAliases.js';
import { isSensitiveKey, maskDeep } from '../common/redact.js';
import {
  type Masker,
  maskedOrNull,
  maskPersonal,
  personalMasker,
  personalValuesOf,
} from '../operations/personal.js';
import { type AttemptRow, type OperationRow, OUTBOX_COLUMNS } from '../operations/rows.js';

/**
 * The stored columns shown under their snake_case names before the API chose camelCase: each is
 * shown under both names (fieldAliases.ts), the snake_case one a deprecated alias. So is `attempt_log`.
 */
export const OPERATION_ALIASES = OUTBOX_COLUMNS.filter(
  (c): c is Extract<(typeof OUTBOX_COLUMNS)[number], `${string}_${string}`> => c.includes('_'),
);

/** An attempt's columns shown under both names. */
export const ATTEMPT_ALIASES = [
  'outbox_id',
  'started_at',
  'duration_ms',
  'status_code',
] as const satisfies ReadonlyArray<keyof AttemptRow>;

const OPERATION_TWINS = twinsOf(OPERATION_ALIASES);
const ATTEMPT_TWINS = twinsOf(ATTEMPT_ALIASES);

/** One delivery attempt as shown: its error masked, each aliased column under both names. */
export type AttemptEntry = WithCamelTwins<AttemptRow, (typeof ATTEMPT_ALIASES)[number]>;

type ShownRow = Omit<OperationRow, 'body' | 'response'> & { body: unknown; response: unknown };

/**
 * How an outbox row is shown to people and internal apps (CLI, read API): the stored columns,
 * with `body` and `response` parsed and their personal fields masked (they are for the operator
 * only). Text columns are stored masked already; they are masked again with the row's own values
 * here, so a row stored by an older version is not shown as it was.
 * Each aliased column comes under both names, and so does the attempt log (GET /v1/operations/{ref}).
 */
export type OutboxEntry = WithCamelTwins<ShownRow, (typeof OPERATION_ALIASES)[number]> & {
  attemptLog?: AttemptEntry[];
  /** Deprecated alias of attemptLog. */
  attempt_log?: AttemptEntry[];
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

/**
 * The row as the API and the CLI's JSON show it (the one place an operation's shape is made, on
 * either store); `attempts` (the list) only when given.
 */
export function toEntry(row: OperationRow, attempts?: AttemptRow[]): OutboxEntry {
  const mask = personalMasker(personalValuesOf(row.body));
  const shown: ShownRow = {
    ...row,
    body: parsedBody(row.body),
    response: parsedResponse(row.response, mask),
    last_error: maskedOrNull(row.last_error, mask),
    decision_reason: maskedOrNull(row.decision_reason, mask),
  };
  const entry: OutboxEntry = withCamelTwins(shown, OPERATION_TWINS);
  if (attempts) {
    const log = attempts.map(
      (a): AttemptEntry => withCamelTwins({ ...a, error: maskedOrNull(a.error, mask) }, ATTEMPT_TWINS),
    );
    entry.attemptLog = log;
    entry.attempt_log = log;
  }
  return entry;
}
