import type { Row } from '../store/script.js';
import type { Sql } from '../store/sql.js';
import { tonnesKg } from './amounts.js';
import type { LedgerFact, OperatorSide } from './balances.js';
import type { CustodyState } from './findingKinds.js';
import type { Deposit, LogRetirement } from './findings.js';
import * as q from './reconcileStatements.js';

/**
 * What a pass or a read of balance sheets gathers for a scope (every issuance, or some): the
 * operations with their states, what the operator shows of their issuances and units, the public
 * log's retirements and the deposits. Reads only, outside any transaction: a pass decides from
 * them and a later pass corrects whatever moved meanwhile.
 */

/** A statement's rows (ScriptStore.read). */
export type Reader = <R extends object = Row>(statement: Sql) => Promise<R[]>;

export interface PassInputs {
  facts: LedgerFact[];
  side: OperatorSide;
  retirements: LogRetirement[];
  deposits: Deposit[];
}

interface LedgerRow {
  outbox_id: number;
  kind: LedgerFact['kind'];
  issuance_id: string | null;
  unit_id: string | null;
  amount_kg: number | null;
  state: string;
  ref: string;
  created_at: string;
  accepted_at: string | null;
  decided_at: string | null;
}

interface CustodyRow {
  id: string;
  ended_at: string | null;
  removed_at: string | null;
}

interface CustodyIdRow {
  id: string;
  source: string;
  added_at: string;
  ended_at: string | null;
}

/** Runs `statement(group)` over `ids` in groups (or once for every id when `ids` is null). */
async function inGroups<R extends object>(
  read: Reader,
  ids: readonly string[] | null,
  statement: (group: readonly string[] | null) => Sql,
): Promise<R[]> {
  if (ids === null) return read<R>(statement(null));
  const out: R[] = [];
  for (let i = 0; i < ids.length; i += q.GROUP)
    out.push(...(await read<R>(statement(ids.slice(i, i + q.GROUP)))));
  return out;
}

/**
 * Whether the custody data shows each id in custody (pure): its custody read decides (held, or
 * ended when the operator answered 404); an id named in custody but not read yet is awaiting.
 */
export function custodyStates(
  read: readonly CustodyRow[],
  named: readonly CustodyIdRow[],
): Map<string, CustodyState> {
  const out = new Map<string, CustodyState>();
  for (const n of named) {
    out.set(n.id, n.ended_at === null ? { state: 'awaiting' } : { state: 'ended', at: n.ended_at });
  }
  for (const r of read) {
    const ended = r.ended_at ?? r.removed_at;
    out.set(r.id, ended === null ? { state: 'held' } : { state: 'ended', at: ended });
  }
  return out;
}

const fact = (r: LedgerRow): LedgerFact => ({
  outboxId: Number(r.outbox_id),
  kind: r.kind,
  issuanceId: r.issuance_id,
  unitId: r.unit_id,
  amountKg: r.amount_kg === null ? null : Number(r.amount_kg),
  state: r.state,
  ref: r.ref,
  createdAt: r.created_at,
  acceptedAt: r.accepted_at,
  decidedAt: r.decided_at,
});

/** The operations on the scope's issuances, and every operation on the units those name. */
async function scopeFacts(read: Reader, scope: readonly string[]): Promise<LedgerRow[]> {
  const onIssuances = await inGroups<LedgerRow>(read, scope, (g) =>
    q.ledgerFacts({ column: 'issuance_id', ids: g ?? [] }),
  );
  const units = [...new Set(onIssuances.flatMap((r) => (r.unit_id === null ? [] : [String(r.unit_id)])))];
  const byId = new Map(onIssuances.map((r) => [Number(r.outbox_id), r]));
  if (units.length > 0) {
    for (const r of await inGroups<LedgerRow>(read, units, (g) =>
      q.ledgerFacts({ column: 'unit_id', ids: g ?? [] }),
    ))
      byId.set(Number(r.outbox_id), r);
  }
  return [...byId.values()];
}

/**
 * The inputs of `scope` (null: everything). `statuses` are the log's retirement statuses; `withLog`
 * also counts the log's operations per issuance (balance sheets show them; a pass does not need them).
 */
export async function readInputs(
  read: Reader,
  scope: readonly string[] | null,
  statuses: readonly string[],
  withLog = false,
): Promise<PassInputs> {
  const facts = (
    scope === null ? await read<LedgerRow>(q.ledgerFacts(null)) : await scopeFacts(read, scope)
  ).map(fact);
  const issuances =
    scope === null
      ? null
      : [...new Set([...scope, ...facts.flatMap((f) => (f.issuanceId ? [f.issuanceId] : []))])];
  const units = scope === null ? null : [...new Set(facts.flatMap((f) => (f.unitId ? [f.unitId] : [])))];
  const [amountRows, issuanceReads, issuanceNamed, unitReads, unitNamed, logRows] = await Promise.all([
    inGroups<{ id: string; amount: unknown; custody: number }>(read, issuances, q.issuanceAmounts),
    inGroups<CustodyRow>(read, issuances, (g) => q.custodyRows('custody_issuances', g)),
    inGroups<CustodyIdRow>(read, issuances, (g) => q.custodyIdRows('issuances', g)),
    inGroups<CustodyRow>(read, units, (g) => q.custodyRows('custody_units', g)),
    inGroups<CustodyIdRow>(read, units, (g) => q.custodyIdRows('units', g)),
    inGroups<{ id: string; issuance_id: string | null; quantity: unknown }>(read, issuances, (g) =>
      q.logRetirements(
        statuses.map((s) => s.toLowerCase()),
        g,
      ),
    ),
  ]);
  const issuanceAmounts = new Map<string, number>();
  // Public issuances first: the custody read's amount only where the public list has none.
  for (const r of [...amountRows].sort((a, b) => Number(a.custody) - Number(b.custody))) {
    const kg = tonnesKg(r.amount);
    if (kg !== null && !issuanceAmounts.has(r.id)) issuanceAmounts.set(r.id, kg);
  }
  const retirements = logRows.map((r) => ({
    id: r.id,
    issuanceId: r.issuance_id,
    quantityKg: tonnesKg(r.quantity),
  }));
  const log = new Map<string, { operations: number; retiredKg: number }>();
  if (withLog && issuances !== null && issuances.length > 0) {
    for (const r of await inGroups<{ id: string; operations: number }>(read, issuances, (g) =>
      q.logCounts(g ?? []),
    )) {
      log.set(r.id, { operations: Number(r.operations), retiredKg: 0 });
    }
    for (const r of retirements) {
      const entry = r.issuanceId === null ? undefined : log.get(r.issuanceId);
      if (entry && r.quantityKg !== null) entry.retiredKg += r.quantityKg;
    }
  }
  const deposits: Deposit[] = [
    ...issuanceNamed
      .filter((n) => n.source === 'webhook')
      .map((n) => ({ kind: 'issuances' as const, id: n.id, at: n.added_at })),
    ...unitNamed
      .filter((n) => n.source === 'webhook')
      .map((n) => ({ kind: 'units' as const, id: n.id, at: n.added_at })),
  ];
  return {
    facts,
    side: {
      issuanceAmounts,
      custodyIssuances: custodyStates(issuanceReads, issuanceNamed),
      custodyUnits: custodyStates(unitReads, unitNamed),
      log,
    },
    retirements,
    deposits,
  };
}
