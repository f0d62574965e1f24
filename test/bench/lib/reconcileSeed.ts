import { createHash } from 'node:crypto';

/**
 * The books the reconciliation bench reads: a mirrored units log, issuances with their amounts,
 * custody, and an outbox of reported operations with their decisions, generated deterministically
 * so both stores get the same rows. Mostly consistent books (each custody unit tokenized 10 t,
 * transferred 10 t, retired 4 t with its retirement in the log, detokenized 3 t) with one
 * inconsistency of each finding kind per 100 units, so a pass records and settles real findings.
 */

/** How big the books are. */
export interface ReconcileSize {
  /** Rows of the public units log (`unit_operations`); at least a tenth are retirements. */
  log: number;
  /** Issuances (`issuances` and their custody reads). */
  issuances: number;
  /** Reported operations (`outbox`), four per custody unit. */
  outbox: number;
}

/** One table's rows, as columns with their PostgreSQL types (SQLite takes the values as they are). */
export interface SeedTable {
  table: string;
  columns: ReadonlyArray<readonly [name: string, pgType: string]>;
  rows: () => Iterable<unknown[]>;
}

/** The pass's time: every window (72 h, 24 h, 7 days) has long ended for every seeded operation. */
export const SEED_NOW = Date.parse('2026-08-01T00:00:00.000Z');
const T0 = Date.parse('2026-01-01T00:00:00.000Z');
const at = (ms: number) => new Date(ms).toISOString();

/** The unit lifecycle of `u` (four outbox rows) carries this inconsistency, by `u % 100`. */
export const FAULT = {
  retirementMissing: 1,
  retireBeyondTokenized: 3,
  notInCustody: 4,
  decisionOverdue: 5,
  rejected: 6,
  queued: 7,
} as const;
/** Issuances `i % 500 === 3` show an amount below what their units tokenize (over-issuance). */
const SMALL_ISSUANCE = 3;

export const issuanceIdOf = (i: number) => String(100_000 + i);
export const unitIdOf = (u: number) => `cu-${u}`;
export const refOf = (n: number) => `bench-op-${n}`;
/** Custody units in the books (four reported operations each). */
export const unitCount = (size: ReconcileSize) => Math.floor(size.outbox / 4);
/** Units deposited by webhook and never tokenized (deposit-not-tokenized). */
export const idleDepositCount = (size: ReconcileSize) => Math.max(1, Math.floor(unitCount(size) / 200));

const hash = (text: string) => createHash('sha256').update(text).digest('hex');

/** A small deterministic PRNG (mulberry32), so both stores and every run hold the same books. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

const OPS = ['Tokenization', 'Transfer', 'retire', 'Detokenization'] as const;

/** The amount (t) of operation `k` (0..3) of unit `u`. */
function amountOf(u: number, k: number): number {
  if (k < 2) return 10;
  if (k === 2) return u % 100 === FAULT.retireBeyondTokenized ? 12 : 4;
  return 3;
}

/** The state of operation `k` of unit `u`: approved unless the unit carries a decision fault. */
function stateOf(u: number, k: number): 'approved' | 'accepted' | 'rejected' | 'queued' {
  if (k !== 3) return 'approved';
  const fault = u % 100;
  if (fault === FAULT.decisionOverdue) return 'accepted';
  if (fault === FAULT.rejected) return 'rejected';
  if (fault === FAULT.queued) return 'queued';
  return 'approved';
}

function* outboxRows(size: ReconcileSize): Iterable<unknown[]> {
  const units = unitCount(size);
  for (let u = 0; u < units; u++) {
    for (let k = 0; k < 4; k++) {
      const id = u * 4 + k + 1;
      const ref = refOf(id);
      const amount = amountOf(u, k);
      const body = JSON.stringify({
        marketplaceId: 'bench-market',
        operationType: OPS[k],
        marketplaceTransactionRef: ref,
        unitId: unitIdOf(u),
        issuanceId: issuanceIdOf(u % size.issuances),
        transactionAmount: amount,
        transactionUnit: 'tCO2e',
        transactionTimestamp: at(T0 + id * 1000),
        ...(k === 1 ? { originWallet: `0xbench${u}a`, destinationWallet: `0xbench${u}b` } : {}),
        ...(k === 2 ? { unitsRetirementNotes: 'bench retirement' } : {}),
      });
      const created = T0 + id * 1000;
      const state = stateOf(u, k);
      const accepted = state === 'queued' ? null : at(created + 30_000);
      const decided = state === 'approved' || state === 'rejected' ? at(created + 60_000) : null;
      yield [
        id,
        ref,
        OPS[k],
        body,
        hash(body),
        state,
        1,
        at(created),
        at(created),
        at(decided === null ? created : created + 60_000),
        accepted,
        decided,
      ];
    }
  }
}

const LOG_STATUSES = ['Tokenized', 'Transferred', 'Transferred', 'Issued', 'Pending'] as const;

/** Log statuses that mean a retirement (the default `retire_match.statuses`, in the spellings seeded). */
export const RETIRED_SPELLINGS = ['Retired', 'RETIRED'] as const;

/**
 * The log, in time order: every `stride`-th entry a retirement, spread through the log as a
 * registry's are (the k-th that of custody unit k, unless it is to go missing; the rest at random
 * issuances), the other entries random statuses.
 */
function* logRows(size: ReconcileSize): Iterable<unknown[]> {
  const rnd = random(29);
  const units = unitCount(size);
  const retirements = Math.max(Math.floor(size.log / 10), units);
  const stride = Math.max(1, Math.floor(size.log / retirements));
  for (let n = 0; n < size.log; n++) {
    const k = n % stride === 0 ? n / stride : -1;
    let issuance: string;
    let status: string;
    let quantity: number;
    if (k >= 0 && k < units && k % 100 !== FAULT.retirementMissing) {
      issuance = issuanceIdOf(k % size.issuances);
      // Some spelled otherwise: the statuses are compared case-insensitively.
      status = k % 50 === 0 ? 'RETIRED' : 'Retired';
      quantity = amountOf(k, 2);
    } else {
      issuance = issuanceIdOf(Math.floor(rnd() * size.issuances));
      // Above any reported Retire's quantity, so no random retirement matches a missing one.
      quantity = 20 + Math.floor(rnd() * 980) + 0.5;
      status = k >= 0 && k < retirements ? 'Retired' : LOG_STATUSES[Math.floor(rnd() * LOG_STATUSES.length)]!;
    }
    const id = `uo-${String(n).padStart(8, '0')}`;
    const date = at(T0 + n * 10_000).slice(0, 10);
    const record = {
      unitsOperationID: id,
      unitsIssuanceID: issuance,
      unitsType: 'VCU',
      unitsMarketplace: 'bench-market',
      unitsStatus: status,
      unitsDate: date,
      unitsQuantity: quantity,
      unitsRetirementNotes: status === 'Retired' ? 'bench retirement' : null,
      unitsAccountOriginID: 1000 + (n % 997),
      unitsAccountDestinationID: 2000 + (n % 991),
      unitsBlockchainNetwork: 'bench-chain',
      unitsLinkRegistry: `https://registry.example/units/${id}`,
    };
    const raw = JSON.stringify(record);
    const seen = at(T0 + n * 10);
    yield [
      id,
      issuance,
      'VCU',
      'bench-market',
      status,
      date,
      quantity,
      record.unitsRetirementNotes,
      record.unitsAccountOriginID,
      record.unitsAccountDestinationID,
      raw,
      hash(raw),
      seen,
      seen,
      n,
    ];
  }
}

function* issuanceRows(size: ReconcileSize): Iterable<unknown[]> {
  for (let i = 0; i < size.issuances; i++) {
    const id = issuanceIdOf(i);
    const amount = i % 500 === SMALL_ISSUANCE ? 5 : 1_000_000;
    const raw = JSON.stringify({ issuanceId: id, issuanceAmount: amount, issuanceVintageYear: 2020 });
    yield [id, 2020, amount, raw, hash(raw), at(T0), at(T0)];
  }
}

function* custodyUnitRows(size: ReconcileSize): Iterable<unknown[]> {
  const units = unitCount(size);
  for (let u = 0; u < units; u++) {
    if (u % 100 === FAULT.notInCustody) continue;
    const id = unitIdOf(u);
    const issuance = issuanceIdOf(u % size.issuances);
    const raw = JSON.stringify({ unitsOperationID: id, unitsIssuanceID: issuance, unitsQuantity: 10 });
    yield [id, issuance, 10, raw, hash(raw), at(T0), at(T0)];
  }
}

/** Deposits: one unit in twenty of the books (tokenized after), and the idle ones (never tokenized). */
function* depositRows(size: ReconcileSize): Iterable<unknown[]> {
  const units = unitCount(size);
  for (let u = 0; u < units; u += 20) yield ['units', unitIdOf(u), 'webhook', at(T0)];
  for (let d = 0; d < idleDepositCount(size); d++) yield ['units', `cu-idle-${d}`, 'webhook', at(T0)];
}

/** The tables, in insertion order (the ledger is left empty: catching it up is measured). */
export function seedTables(size: ReconcileSize): SeedTable[] {
  return [
    {
      table: 'unit_operations',
      columns: [
        ['unitsOperationID', 'text'],
        ['unitsIssuanceID', 'text'],
        ['unitsType', 'text'],
        ['unitsMarketplace', 'text'],
        ['unitsStatus', 'text'],
        ['unitsDate', 'text'],
        ['unitsQuantity', 'float8'],
        ['unitsRetirementNotes', 'text'],
        ['unitsAccountOriginID', 'int8'],
        ['unitsAccountDestinationID', 'int8'],
        ['_raw', 'jsonb'],
        ['_hash', 'text'],
        ['_first_seen_at', 'timestamptz'],
        ['_last_seen_at', 'timestamptz'],
        ['_position', 'int8'],
      ],
      rows: () => logRows(size),
    },
    {
      table: 'issuances',
      columns: [
        ['issuanceId', 'text'],
        ['issuanceVintageYear', 'int8'],
        ['issuanceAmount', 'float8'],
        ['_raw', 'jsonb'],
        ['_hash', 'text'],
        ['_first_seen_at', 'timestamptz'],
        ['_last_seen_at', 'timestamptz'],
      ],
      rows: () => issuanceRows(size),
    },
    {
      // Every issuance held in custody, read with the same amount.
      table: 'custody_issuances',
      columns: [
        ['issuanceId', 'text'],
        ['issuanceVintageYear', 'int8'],
        ['issuanceAmount', 'float8'],
        ['_raw', 'jsonb'],
        ['_hash', 'text'],
        ['_first_seen_at', 'timestamptz'],
        ['_last_seen_at', 'timestamptz'],
      ],
      rows: () => issuanceRows(size),
    },
    {
      table: 'custody_units',
      columns: [
        ['unitsOperationID', 'text'],
        ['unitsIssuanceID', 'text'],
        ['unitsQuantity', 'float8'],
        ['_raw', 'jsonb'],
        ['_hash', 'text'],
        ['_first_seen_at', 'timestamptz'],
        ['_last_seen_at', 'timestamptz'],
      ],
      rows: () => custodyUnitRows(size),
    },
    {
      table: 'custody_ids',
      columns: [
        ['kind', 'text'],
        ['id', 'text'],
        ['source', 'text'],
        ['added_at', 'timestamptz'],
      ],
      rows: () => depositRows(size),
    },
    {
      table: 'outbox',
      columns: [
        ['id', 'int8'],
        ['marketplaceTransactionRef', 'text'],
        ['operationType', 'text'],
        ['body', 'text'],
        ['body_hash', 'text'],
        ['state', 'text'],
        ['attempts', 'int4'],
        ['next_attempt_at', 'timestamptz'],
        ['created_at', 'timestamptz'],
        ['updated_at', 'timestamptz'],
        ['accepted_at', 'timestamptz'],
        ['decided_at', 'timestamptz'],
      ],
      rows: () => outboxRows(size),
    },
  ];
}
