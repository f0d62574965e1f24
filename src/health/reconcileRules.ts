import type { FindingKind } from '../reconcile/findingKinds.js';
import type { Problem, RuleInputs } from './problems.js';
import type { HealthSnapshot, ReconciliationFindingFacts } from './snapshot.js';

/**
 * `ledger-mismatch` (issue 29): the marketplace's reported operations disagree with the registry's
 * data, as the last reconciliation pass found. Critical while a critical finding is open (tokens
 * outstanding below zero, tokenized beyond the issuance: units counted twice); a warning while a
 * warning finding is open, except `decision-overdue`, which is its own problem (raised from the
 * outbox, not twice); nothing for info findings alone (a deposit not tokenized yet is no fault).
 */

/** The finding kind that is already the problem `decision-overdue`. */
const OWN_PROBLEM_KIND: FindingKind = 'decision-overdue';

/** What the on-call engineer does about each kind (docs/reconciliation.md explains them in full). */
const KIND_STEPS: Partial<Record<FindingKind, string>> = {
  'outstanding-negative':
    'outstanding-negative: more retired or detokenized than tokenized; stop trading those tokens and compare the internal ledger with the operations listed (a Tokenization never reported? a Retire reported twice?)',
  'over-issuance':
    'over-issuance: more tokenized than the issuance holds; stop minting on it and find the duplicate Tokenization among the operations listed',
  'not-in-custody':
    'not-in-custody: operations on ids the custody data does not hold; run vcu-sync sync custody, then ask the operator whether those units are in custody',
  'retirement-missing':
    "retirement-missing: an approved Retire is not in the operator's public log past reconcile.retire_window_hours; send the operator its ref",
};

const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

/** The step for a kind, none for a kind this version does not know (a newer version recorded it). */
function stepOf(kind: string): string[] {
  // hasOwn first: a stored kind is text ("constructor" must not find Object's).
  const step = Object.hasOwn(KIND_STEPS, kind) ? KIND_STEPS[kind as FindingKind] : undefined;
  return step ? [step] : [];
}

/** Whether a finding counts toward the problem. */
const counts = (f: { kind: string; severity: string }) =>
  f.severity === 'critical' || (f.severity === 'warning' && f.kind !== OWN_PROBLEM_KIND);

/** A finding named with its subject ("over-issuance on issuance ISS-1: ..."). */
export const describeFinding = (f: ReconciliationFindingFacts) =>
  `${f.kind} on ${f.subject} ${f.subjectId}: ${f.detail}`;

export function reconcileProblems(snapshot: HealthSnapshot, inputs: RuleInputs): Problem[] {
  // Off: no pass runs, so what the table holds is no longer current and cannot be resolved.
  if (inputs.reconcileEnabled === false) return [];
  const { reconciliation } = snapshot;
  const counted = reconciliation.open.filter(counts);
  const total = counted.reduce((n, c) => n + c.findings, 0);
  if (total === 0) return [];
  const critical = counted.some((c) => c.severity === 'critical');
  const example = reconciliation.recent.find(counts);
  const kinds = [...new Set(counted.map((c) => c.kind))];
  const steps = [
    'read the findings with their figures: vcu-sync reconcile (vcu-sync reconcile --issuance ID for one issuance)',
    ...kinds.flatMap(stepOf),
    'each finding resolves itself once a pass no longer finds it; docs/reconciliation.md explains each kind',
  ];
  return [
    {
      severity: critical ? 'critical' : 'warning',
      code: 'ledger-mismatch',
      message: `${plural(total, 'open reconciliation finding')}: ${counted
        .map((c) => `${c.kind} ${c.findings}`)
        .join(', ')}${example ? ` (e.g. ${describeFinding(example)})` : ''}`,
      action: steps.join('; '),
    },
  ];
}
