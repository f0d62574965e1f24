import type { ReconcileSettings } from '../config/configReconcile.js';
import { grams } from '../outbox/ledgerEntry.js';
import { KG_EPSILON, tonnes } from './amounts.js';
import type { LedgerFact } from './balances.js';
import { type BalanceSheet, FINDING_KINDS, type Finding, type FindingKind } from './findingKinds.js';

/**
 * The rules: from the balance sheets and the facts of a pass, the findings that hold now, and when
 * each time-bound condition of the pass falls due (a retirement window ending, a decision turning
 * overdue, a deposit's days running out), so the daemon looks again then. Pure.
 */

/** A retirement in the operator's public units log, as matching reads it. */
export interface LogRetirement {
  id: string;
  issuanceId: string | null;
  quantityKg: number | null;
}

/** A custody deposit confirmed by webhook. */
export interface Deposit {
  kind: 'issuances' | 'units';
  id: string;
  at: string;
}

export interface RuleSettings {
  reconcile: Pick<ReconcileSettings, 'retire_window_hours' | 'tokenize_within_days' | 'retire_match'>;
  decisionWarnHours: number;
}

/** What the rules decided. */
export interface Verdict {
  findings: Finding[];
  /** The earliest moment a condition of this scope may turn (ms), by issuance; '' for operations without one. */
  dueAt: Map<string, number>;
}

const HOUR_MS = 3_600_000;

/**
 * Code-unit order: for ISO timestamps (both stores give `YYYY-MM-DDTHH:MM:SS.sssZ`) the same as
 * `localeCompare`, at a third of its cost (a full pass sorts every approved Retire).
 */
const textOrder = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

function finding(kind: FindingKind, f: Omit<Finding, 'kind' | 'severity'>): Finding {
  return { kind, severity: FINDING_KINDS[kind], ...f };
}

/** A finding about one operation, named by its ref. */
function operationFinding(
  kind: FindingKind,
  f: LedgerFact,
  figures: Pick<Finding, 'expectedKg' | 'foundKg' | 'detail'>,
): Finding {
  return finding(kind, {
    subject: 'operation',
    subjectId: f.ref,
    issuanceId: f.issuanceId,
    unitId: f.unitId,
    ref: f.ref,
    ...figures,
  });
}

/**
 * The findings of a balance sheet: below zero, beyond the issuance (less `givenBack`, what its
 * detokenizations gave back), outside custody (given the operations on its subject, which only a
 * subject outside custody needs).
 */
function sheetFindings(sheet: BalanceSheet, facts: readonly LedgerFact[], givenBack: number): Finding[] {
  const out: Finding[] = [];
  const b = sheet.balance;
  const where = { subject: sheet.subject, subjectId: sheet.id, ref: b.lastRef } as const;
  const ids = {
    issuanceId: sheet.issuanceId,
    unitId: sheet.subject === 'unit' ? sheet.id : null,
  };
  if (b.outstandingKg < -KG_EPSILON) {
    out.push(
      finding('outstanding-negative', {
        ...where,
        ...ids,
        expectedKg: 0,
        foundKg: b.outstandingKg,
        detail: `${sheet.subject} ${sheet.id}: retired ${tonnes(b.retiredKg)} and detokenized ${tonnes(b.detokenizedKg)} of ${tonnes(b.tokenizedKg)} tokenized (outstanding ${tonnes(b.outstandingKg)})`,
      }),
    );
  }
  const given = givenBack;
  const netKg = grams(b.tokenizedKg - given);
  if (sheet.issuanceAmountKg !== null && netKg > sheet.issuanceAmountKg + KG_EPSILON) {
    const tokenized =
      given > 0
        ? `${tonnes(b.tokenizedKg)} tokenized less ${tonnes(given)} given back by detokenization (${tonnes(netKg)})`
        : `${tonnes(b.tokenizedKg)} tokenized`;
    out.push(
      finding('over-issuance', {
        ...where,
        ...ids,
        expectedKg: sheet.issuanceAmountKg,
        foundKg: netKg,
        detail: `issuance ${sheet.id}: ${tokenized}, beyond its amount of ${tonnes(sheet.issuanceAmountKg)}`,
      }),
    );
  }
  const custody = custodyFinding(sheet, facts);
  if (custody) out.push(finding('not-in-custody', { ...where, ...ids, ...custody }));
  return out;
}

/**
 * What approved detokenizations gave back to each issuance: whole tonnes only, floor(kg/1000) of
 * each (the part below a tonne stays with the marketplace), so only those may be tokenized again.
 */
function givenBackByIssuance(facts: readonly LedgerFact[]): Map<string, number> {
  const out = new Map<string, number>();
  for (const f of facts) {
    if (f.kind !== 'detokenization' || f.state !== 'approved' || f.amountKg === null || f.issuanceId === null)
      continue;
    const whole = Math.floor((f.amountKg + KG_EPSILON) / 1000) * 1000;
    out.set(f.issuanceId, (out.get(f.issuanceId) ?? 0) + whole);
  }
  return out;
}

/**
 * Outside custody: operations (not rejected, cancelled or failed) reported on an id never in
 * custody or after its custody ended, or tokens still outstanding on an id whose custody ended
 * (they stand for credits the marketplace no longer holds).
 */
function custodyFinding(
  sheet: BalanceSheet,
  facts: readonly LedgerFact[],
): Pick<Finding, 'ref' | 'expectedKg' | 'foundKg' | 'detail'> | null {
  const custody = sheet.custody;
  if (custody.state !== 'never' && custody.state !== 'ended') return null;
  const after = custody.state === 'ended' ? custody.at : null;
  const concerned = facts.filter(
    (f) =>
      f.state !== 'rejected' &&
      f.state !== 'cancelled' &&
      f.state !== 'failed' &&
      (after === null || Date.parse(f.createdAt) > Date.parse(after)),
  );
  const last = concerned[concerned.length - 1];
  const what = `${sheet.subject} ${sheet.id}`;
  if (custody.state === 'never') {
    if (!last) return null;
    return {
      ref: last.ref,
      expectedKg: null,
      foundKg: null,
      detail: `${concerned.length} operation(s) reported on ${what}, which the custody data does not show in custody`,
    };
  }
  const outstanding = sheet.balance.outstandingKg;
  const holding = outstanding > KG_EPSILON;
  if (!last && !holding) return null;
  const parts = [
    ...(last
      ? [`${concerned.length} operation(s) reported on ${what} after its custody ended (${custody.at})`]
      : []),
    ...(holding
      ? [`${tonnes(outstanding)} still outstanding on ${what}, whose custody ended (${custody.at})`]
      : []),
  ];
  return {
    ref: last ? last.ref : sheet.balance.lastRef,
    expectedKg: holding ? 0 : null,
    foundKg: holding ? outstanding : null,
    detail: parts.join('; '),
  };
}

/** The key a retirement is matched on, as `retire_match` says (null: it cannot match). */
function matchKey(
  match: RuleSettings['reconcile']['retire_match'],
  issuanceId: string | null,
  unitId: string | null,
  kg: number | null,
): string | null {
  const parts: string[] = [];
  if (match.issuance) {
    if (issuanceId === null) return null;
    parts.push(issuanceId);
  }
  if (match.unit) {
    if (unitId === null) return null;
    parts.push(unitId);
  }
  if (match.quantity) {
    if (kg === null) return null;
    parts.push(String(Math.round(kg * 1000)));
  }
  return parts.join('\u0000');
}

/**
 * Approved Retires matched with the log's retirements, oldest approval first, each log entry used
 * once: those still unmatched past the window are findings; the others fall due when it ends.
 */
function retirementFindings(
  facts: readonly LedgerFact[],
  log: readonly LogRetirement[],
  settings: RuleSettings,
  now: number,
  due: (issuanceId: string | null, at: number) => void,
): Finding[] {
  const match = settings.reconcile.retire_match;
  const available = new Map<string, number>();
  for (const entry of log) {
    const key = matchKey(match, entry.issuanceId, entry.id, entry.quantityKg);
    if (key !== null) available.set(key, (available.get(key) ?? 0) + 1);
  }
  const retires = facts
    .filter((f) => f.kind === 'retire' && f.state === 'approved')
    .sort((a, b) => textOrder(a.decidedAt ?? '', b.decidedAt ?? '') || a.outboxId - b.outboxId);
  const windowMs = settings.reconcile.retire_window_hours * HOUR_MS;
  const out: Finding[] = [];
  for (const f of retires) {
    const key = matchKey(match, f.issuanceId, f.unitId, f.amountKg);
    const left = key === null ? 0 : (available.get(key) ?? 0);
    if (key !== null && left > 0) {
      available.set(key, left - 1);
      continue;
    }
    const ends = Date.parse(f.decidedAt ?? f.createdAt) + windowMs;
    if (ends > now) {
      due(f.issuanceId, ends);
      continue;
    }
    out.push(
      operationFinding('retirement-missing', f, {
        expectedKg: f.amountKg,
        foundKg: 0,
        detail: `Retire ${f.ref} of ${f.amountKg === null ? 'an unreadable amount' : tonnes(f.amountKg)} on issuance ${f.issuanceId ?? '(none)'}, approved ${f.decidedAt ?? '(unknown)'}: no matching retirement in the public units log after ${settings.reconcile.retire_window_hours} h`,
      }),
    );
  }
  return out;
}

/** Operations accepted by the operator and still undecided past `status.decision_warn_hours`. */
function overdueFindings(
  facts: readonly LedgerFact[],
  settings: RuleSettings,
  now: number,
  due: (issuanceId: string | null, at: number) => void,
): Finding[] {
  const limitMs = settings.decisionWarnHours * HOUR_MS;
  const out: Finding[] = [];
  for (const f of facts) {
    if (f.state !== 'accepted' || f.acceptedAt === null) continue;
    const turns = Date.parse(f.acceptedAt) + limitMs;
    if (turns > now) {
      due(f.issuanceId, turns);
      continue;
    }
    out.push(
      operationFinding('decision-overdue', f, {
        expectedKg: null,
        foundKg: f.amountKg,
        detail: `${f.kind} ${f.ref} accepted by the operator ${f.acceptedAt}, no decision after ${settings.decisionWarnHours} h`,
      }),
    );
  }
  return out;
}

/** Deposits with no Tokenization reported on their id within `tokenize_within_days`. */
function depositFindings(
  facts: readonly LedgerFact[],
  deposits: readonly Deposit[],
  settings: RuleSettings,
  now: number,
  due: (issuanceId: string | null, at: number) => void,
): Finding[] {
  // One set per kind: no key string built per Tokenization.
  const tokenized = { issuances: new Set<string>(), units: new Set<string>() };
  for (const f of facts) {
    if (f.kind !== 'tokenization' || f.state === 'cancelled') continue;
    if (f.issuanceId !== null) tokenized.issuances.add(f.issuanceId);
    if (f.unitId !== null) tokenized.units.add(f.unitId);
  }
  const limitMs = settings.reconcile.tokenize_within_days * 24 * HOUR_MS;
  const out: Finding[] = [];
  for (const d of deposits) {
    if (tokenized[d.kind].has(d.id)) continue;
    const issuanceId = d.kind === 'issuances' ? d.id : null;
    const turns = Date.parse(d.at) + limitMs;
    if (turns > now) {
      due(issuanceId, turns);
      continue;
    }
    const subject = d.kind === 'issuances' ? 'issuance' : 'unit';
    out.push(
      finding('deposit-not-tokenized', {
        subject,
        subjectId: d.id,
        issuanceId,
        unitId: d.kind === 'units' ? d.id : null,
        ref: null,
        expectedKg: null,
        foundKg: null,
        detail: `${subject} ${d.id} deposited into custody ${d.at}: no Tokenization reported within ${settings.reconcile.tokenize_within_days} days`,
      }),
    );
  }
  return out;
}

/** Every finding of a pass, and when its time-bound conditions fall due. */
export function decideFindings(
  sheets: readonly BalanceSheet[],
  facts: readonly LedgerFact[],
  log: readonly LogRetirement[],
  deposits: readonly Deposit[],
  settings: RuleSettings,
  now: number,
): Verdict {
  const dueAt = new Map<string, number>();
  const due = (issuanceId: string | null, at: number) => {
    const key = issuanceId ?? '';
    const was = dueAt.get(key);
    if (was === undefined || at < was) dueAt.set(key, at);
  };
  const ordered = [...facts].sort((a, b) => a.outboxId - b.outboxId);
  // Only a subject outside custody looks at its operations: group those alone (most are held).
  const outside = (subject: BalanceSheet['subject']) =>
    new Set(
      sheets
        .filter((s) => s.subject === subject && (s.custody.state === 'never' || s.custody.state === 'ended'))
        .map((s) => s.id),
    );
  const onIssuance = groupBy(ordered, (f) => f.issuanceId, outside('issuance'));
  const onUnit = groupBy(ordered, (f) => f.unitId, outside('unit'));
  const givenBack = givenBackByIssuance(ordered);
  const findings = [
    ...sheets.flatMap((s) =>
      sheetFindings(
        s,
        (s.subject === 'issuance' ? onIssuance : onUnit).get(s.id) ?? [],
        s.subject === 'issuance' ? (givenBack.get(s.id) ?? 0) : 0,
      ),
    ),
    ...retirementFindings(ordered, log, settings, now, due),
    ...overdueFindings(ordered, settings, now, due),
    ...depositFindings(ordered, deposits, settings, now, due),
  ];
  return { findings, dueAt };
}

/** The facts by `key`, for the keys in `wanted` only. */
function groupBy(
  facts: readonly LedgerFact[],
  key: (f: LedgerFact) => string | null,
  wanted: ReadonlySet<string>,
): Map<string, LedgerFact[]> {
  const out = new Map<string, LedgerFact[]>();
  if (wanted.size === 0) return out;
  for (const f of facts) {
    const k = key(f);
    if (k === null || !wanted.has(k)) continue;
    const list = out.get(k);
    if (list) list.push(f);
    else out.set(k, [f]);
  }
  return out;
}
