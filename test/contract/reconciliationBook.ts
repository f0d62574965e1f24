import { loadConfig } from '../../src/config/config.js';
import type { RuleSettings } from '../../src/reconcile/findings.js';
import { type PassOutcome, runPass } from '../../src/reconcile/pass.js';
import { run, type ScriptStore } from '../../src/store/script.js';
import { join, raw, type Sql, sql, typed } from '../../src/store/sql.js';

/**
 * A marketplace's books with one of each finding, written the same way into either store (rows of
 * the outbox, the mirror, the custody data and the public units log, as the dispatcher, the
 * webhooks and the syncs would have left them), for the reconciliation's route and command suites.
 * Times are relative to `now`, the moment of the passes; every time-bound condition is days past
 * its limit, so a later clock (a child process's) finds the same.
 */

const HOUR = 3_600_000;
const at = (ms: number) => typed(new Date(ms).toISOString(), 'timestamptz');

/** The settings of the configuration's defaults (retire window 72 h, deposits 7 days, decisions 24 h). */
export function bookSettings(): RuleSettings {
  const config = loadConfig({ env: {} });
  return { reconcile: config.reconcile, decisionWarnHours: config.status.decision_warn_hours };
}

/** An issuance id a spreadsheet would run as a formula, with a comma and quotes: CSV must quote and guard it. */
export const FORMULA_ID = '=HYPERLINK("http://evil.example","x")';
/** A unit id holding a line break and a quote. */
export const BROKEN_UNIT = 'U-X\n"1"';
/** Clean issuances beyond the findings', so that the balance sheets take several pages. */
export const FILLER = Array.from({ length: 8 }, (_, i) => `ISS-P0${i + 1}`);

/** One reported operation as the book writes it. */
export interface Op {
  ref: string;
  type: 'Tokenization' | 'retire' | 'Transfer' | 'Detokenization';
  issuance: string;
  unit?: string;
  tonnes: number;
  state: 'approved' | 'accepted';
  /** Hours before `now` it was decided (approved) or accepted (accepted). */
  hoursAgo: number;
}

/** The operations reported: each line says which finding it makes, if any. */
const OPERATIONS: Op[] = [
  // ISS-A: clean, three units, a Retire the public log shows.
  {
    ref: 'op-a1',
    type: 'Tokenization',
    issuance: 'ISS-A',
    unit: 'U-A1',
    tonnes: 20,
    state: 'approved',
    hoursAgo: 200,
  },
  {
    ref: 'op-a2',
    type: 'Tokenization',
    issuance: 'ISS-A',
    unit: 'U-A2',
    tonnes: 20,
    state: 'approved',
    hoursAgo: 200,
  },
  {
    ref: 'op-a3',
    type: 'Tokenization',
    issuance: 'ISS-A',
    unit: 'U-A3',
    tonnes: 10,
    state: 'approved',
    hoursAgo: 200,
  },
  {
    ref: 'op-a4',
    type: 'retire',
    issuance: 'ISS-A',
    unit: 'U-A1',
    tonnes: 10,
    state: 'approved',
    hoursAgo: 100,
  },
  // ISS-B: 30 t tokenized of an issuance of 20 t: over-issuance.
  { ref: 'op-b1', type: 'Tokenization', issuance: 'ISS-B', tonnes: 30, state: 'approved', hoursAgo: 200 },
  // ISS-C: 8 t retired of 5 t tokenized: outstanding-negative.
  { ref: 'op-c1', type: 'Tokenization', issuance: 'ISS-C', tonnes: 5, state: 'approved', hoursAgo: 200 },
  { ref: 'op-c2', type: 'retire', issuance: 'ISS-C', tonnes: 8, state: 'approved', hoursAgo: 100 },
  // ISS-D: never in custody: not-in-custody.
  { ref: 'op-d1', type: 'Tokenization', issuance: 'ISS-D', tonnes: 1, state: 'approved', hoursAgo: 200 },
  // ISS-E: a Retire the public log never showed: retirement-missing.
  { ref: 'op-e1', type: 'Tokenization', issuance: 'ISS-E', tonnes: 10, state: 'approved', hoursAgo: 200 },
  { ref: 'op-e2', type: 'retire', issuance: 'ISS-E', tonnes: 2, state: 'approved', hoursAgo: 100 },
  // ISS-F: accepted two days ago, no decision: decision-overdue.
  { ref: 'op-f1', type: 'Tokenization', issuance: 'ISS-F', tonnes: 3, state: 'accepted', hoursAgo: 48 },
  // Ids a spreadsheet or a terminal must not take as instructions: not-in-custody (issuance and unit).
  {
    ref: 'op-x1',
    type: 'Tokenization',
    issuance: FORMULA_ID,
    unit: BROKEN_UNIT,
    tonnes: 1,
    state: 'approved',
    hoursAgo: 200,
  },
  // Lower case sorts after upper case in byte order (not in a language collation).
  { ref: 'op-l1', type: 'Tokenization', issuance: 'iss-lower', tonnes: 5, state: 'approved', hoursAgo: 200 },
  ...FILLER.map(
    (issuance, i): Op => ({
      ref: `op-p${i + 1}`,
      type: 'Tokenization',
      issuance,
      tonnes: 1,
      state: 'approved',
      hoursAgo: 200,
    }),
  ),
];

/** Issuances in the operator's public list, with their amounts (t). */
const ISSUANCES: Array<[string, number]> = [
  ['ISS-A', 100],
  ['ISS-B', 20],
  ['ISS-C', 100],
  ['ISS-D', 10],
  ['ISS-E', 100],
  ['ISS-F', 100],
  ['iss-lower', 50],
  ...FILLER.map((id): [string, number] => [id, 10]),
];
/** Issuances and units the custody data shows held. */
const HELD_ISSUANCES = ['ISS-A', 'ISS-B', 'ISS-C', 'ISS-E', 'ISS-F', 'ISS-G', 'iss-lower', ...FILLER];
const HELD_UNITS = ['U-A1', 'U-A2', 'U-A3'];

function operationRow(op: Op, now: number) {
  const body = JSON.stringify({
    marketplaceTransactionRef: op.ref,
    operationType: op.type,
    issuanceId: op.issuance,
    ...(op.unit === undefined ? {} : { unitId: op.unit }),
    transactionAmount: op.tonnes,
    transactionUnit: 'tCO2e',
  });
  const when = now - op.hoursAgo * HOUR;
  const created = when - HOUR;
  return sql`INSERT INTO outbox ("marketplaceTransactionRef", "operationType", body, body_hash, state, attempts,
      next_attempt_at, created_at, updated_at, accepted_at, decided_at)
    VALUES (${op.ref}, ${op.type.toLowerCase()}, ${body}, ${`hash-${op.ref}`}, ${op.state}, 1, ${at(created)},
      ${at(created)}, ${at(when)}, ${at(when)}, ${op.state === 'approved' ? at(when) : null})`;
}

/** A mirror row of `table` keyed `key` = `id`, with `fields` (read `now`). */
function mirrorRow(
  table: string,
  key: string,
  id: string,
  fields: Record<string, string | number>,
  now: number,
) {
  const record = JSON.stringify({ [key]: id, ...fields });
  const names = raw([key, ...Object.keys(fields)].map((f) => `"${f}"`).join(', '));
  const values = join(
    [id, ...Object.values(fields)].map((v) => sql`${v}`),
    ', ',
  );
  return sql`INSERT INTO ${raw(table)} (${names}, _raw, _hash, _first_seen_at, _last_seen_at)
    VALUES (${values}, ${record}, ${`hash-${id}`}, ${at(now)}, ${at(now)})`;
}

/** A retirement in the operator's public units log. */
export const logRetirement = (id: string, issuance: string, tonnes: number, now: number) =>
  mirrorRow(
    'unit_operations',
    'unitsOperationID',
    id,
    { unitsIssuanceID: issuance, unitsStatus: 'Retired', unitsQuantity: tonnes },
    now,
  );

/** Writes the book into `store`. */
/** Reports `ops` into `store`'s outbox, in one transaction. */
export async function writeOperations(store: ScriptStore, ops: readonly Op[], now: number): Promise<void> {
  await store.transaction(
    (function* () {
      for (const op of ops) yield* run(operationRow(op, now));
    })(),
  );
}

export async function writeBook(store: ScriptStore, now: number): Promise<void> {
  await store.transaction(
    (function* () {
      for (const op of OPERATIONS) yield* run(operationRow(op, now));
      for (const [id, tonnes] of ISSUANCES)
        yield* run(mirrorRow('issuances', 'issuanceId', id, { issuanceAmount: tonnes }, now));
      for (const id of HELD_ISSUANCES)
        yield* run(mirrorRow('custody_issuances', 'issuanceId', id, { issuanceAmount: 100 }, now));
      for (const id of HELD_UNITS)
        yield* run(mirrorRow('custody_units', 'unitsOperationID', id, { unitsIssuanceID: 'ISS-A' }, now));
      yield* run(logRetirement('LOG-A4', 'ISS-A', 10, now));
      yield* run(logRetirement('LOG-C2', 'ISS-C', 8, now));
      // ISS-G deposited by webhook ten days ago, never tokenized: deposit-not-tokenized.
      yield* run(
        sql`INSERT INTO custody_ids (kind, id, source, added_at) VALUES ('issuances', 'ISS-G', 'webhook', ${at(now - 240 * HOUR)})`,
      );
    })(),
  );
}

/** One statement on `store`, in a transaction of its own. */
export const change = (store: ScriptStore, statement: Sql) =>
  store.transaction(
    (function* () {
      yield* run(statement);
    })(),
  );

/** A full pass (or over `scope`) at `now`. */
export const passAt = (
  store: ScriptStore,
  now: number,
  scope: string[] | null = null,
): Promise<PassOutcome> => runPass({ store, settings: bookSettings(), now: () => now }, scope);

/** The open findings the book makes, as `kind subject-id`. */
export const OPEN_FINDINGS = [
  'over-issuance ISS-B',
  'outstanding-negative ISS-C',
  'not-in-custody ISS-D',
  'retirement-missing op-e2',
  'decision-overdue op-f1',
  `not-in-custody ${FORMULA_ID}`,
  `not-in-custody ${BROKEN_UNIT}`,
  'deposit-not-tokenized ISS-G',
].sort();

/** The balance sheets, in the order of the pages: issuance ids in byte order, each followed by its units. */
export const SHEET_ORDER = [
  `issuance ${FORMULA_ID}`,
  `unit ${BROKEN_UNIT}`,
  'issuance ISS-A',
  'unit U-A1',
  'unit U-A2',
  'unit U-A3',
  'issuance ISS-B',
  'issuance ISS-C',
  'issuance ISS-D',
  'issuance ISS-E',
  'issuance ISS-F',
  ...FILLER.map((id) => `issuance ${id}`),
  'issuance iss-lower',
];
