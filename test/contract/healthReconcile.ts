import { expect, it } from 'vitest';
import { renderStatusPage } from '../../src/api/statusPage.js';
import { updateGauges } from '../../src/api/statusRoutes.js';
import { createMetrics } from '../../src/common/metrics.js';
import { formatHealth } from '../../src/health/format.js';
import { readHealth } from '../../src/health/readHealth.js';
import { runPass } from '../../src/reconcile/pass.js';
import {
  ago,
  CONFIG,
  type Exec,
  type Health,
  type HealthCase,
  type HealthStore,
  NOW,
  operation,
  syncRun,
} from './healthStores.js';

/**
 * The health snapshot's reconciliation situations (issue 29): `reconciliation_findings` rows seeded
 * with backdated times, then what `ledger-mismatch` makes of them (critical on a critical finding,
 * a warning on a warning one other than decision-overdue, nothing on info alone), the figures the
 * gauges and the status page read; and a real pass over reported operations, on either store.
 */

/** A finding row first seen `minutes` before NOW, last seen `seenMinutes` before it (open unless `resolvedMinutes`). */
export async function finding(
  exec: Exec,
  f: {
    kind: string;
    severity: string;
    subject?: string;
    subjectId: string;
    detail?: string;
    minutes: number;
    seenMinutes?: number;
    resolvedMinutes?: number;
    expectedKg?: number | null;
    foundKg?: number | null;
  },
): Promise<void> {
  await exec(
    `INSERT INTO reconciliation_findings (kind, subject, subject_id, issuance_id, unit_id, ref, severity,
       expected_kg, found_kg, detail, first_seen_at, last_seen_at, resolved_at)
     VALUES (?, ?, ?, ?, NULL, ?, ?, ?, ?, ?, ?, ?, ?)`,
    [
      f.kind,
      f.subject ?? 'issuance',
      f.subjectId,
      f.subject === 'operation' ? null : f.subjectId,
      `ref-${f.subjectId}`,
      f.severity,
      f.expectedKg ?? null,
      f.foundKg ?? null,
      f.detail ?? `${f.kind} found on ${f.subjectId}`,
      ago(f.minutes),
      ago(f.seenMinutes ?? 1),
      f.resolvedMinutes === undefined ? null : ago(f.resolvedMinutes),
    ],
  );
}

/** Every resource synced two minutes ago: only the reconciliation can raise a problem. */
async function allSynced(exec: Exec): Promise<void> {
  for (const r of ['projects', 'issuances', 'units', 'custody']) await syncRun(exec, r, 'succeeded', 2);
}

const mismatch = (health: Health) => health.problems.find((p) => p.code === 'ledger-mismatch');
const only = (health: Health) => {
  const found = health.problems.filter((p) => p.code === 'ledger-mismatch');
  expect(found).toHaveLength(1);
  return found[0]!;
};

export const RECONCILE_CASES: HealthCase[] = [
  {
    name: 'reconciliation: a critical finding open is a critical ledger-mismatch; decision-overdue and info are not counted in it',
    seed: async (exec) => {
      await allSynced(exec);
      await finding(exec, {
        kind: 'over-issuance',
        severity: 'critical',
        subjectId: 'ISS-OVER',
        detail: 'issuance ISS-OVER: 120 t tokenized, beyond its amount of 100 t',
        minutes: 30,
        expectedKg: 100_000,
        foundKg: 120_000,
      });
      await finding(exec, { kind: 'not-in-custody', severity: 'warning', subjectId: 'ISS-A', minutes: 20 });
      await finding(exec, { kind: 'not-in-custody', severity: 'warning', subjectId: 'ISS-B', minutes: 10 });
      await finding(exec, {
        kind: 'decision-overdue',
        severity: 'warning',
        subject: 'operation',
        subjectId: 'op-late',
        minutes: 5,
      });
      await finding(exec, {
        kind: 'deposit-not-tokenized',
        severity: 'info',
        subjectId: 'ISS-D',
        minutes: 3,
        seenMinutes: 0,
      });
      // Resolved: neither counted nor listed, but its resolution is when a pass last recorded.
      await finding(exec, {
        kind: 'outstanding-negative',
        severity: 'critical',
        subjectId: 'ISS-FIXED',
        minutes: 300,
        seenMinutes: 200,
        resolvedMinutes: 190,
      });
    },
    codes: ['ledger-mismatch'],
    check: (health) => {
      const p = only(health);
      expect(p.severity).toBe('critical');
      expect(health.status).toBe('critical');
      expect(p.message).toBe(
        '3 open reconciliation findings: over-issuance 1, not-in-custody 2 (e.g. over-issuance on issuance ISS-OVER: issuance ISS-OVER: 120 t tokenized, beyond its amount of 100 t)',
      );
      expect(p.action).toMatch(/^read the findings with their figures: vcu-sync reconcile \(/);
      expect(p.action).toContain('over-issuance: more tokenized than the issuance holds');
      expect(p.action).toContain('not-in-custody: operations on ids the custody data does not hold');
      expect(p.action).not.toContain('outstanding-negative:');
      expect(p.action).toContain('docs/reconciliation.md');
      const r = health.snapshot.reconciliation;
      expect(r.open).toEqual([
        { kind: 'over-issuance', severity: 'critical', findings: 1 },
        { kind: 'decision-overdue', severity: 'warning', findings: 1 },
        { kind: 'not-in-custody', severity: 'warning', findings: 2 },
        { kind: 'deposit-not-tokenized', severity: 'info', findings: 1 },
      ]);
      // The worst first, then the newest; resolved ones not at all.
      expect(r.recent.map((f) => f.subjectId)).toEqual(['ISS-OVER', 'op-late', 'ISS-B', 'ISS-A', 'ISS-D']);
      expect(r.recent[0]).toEqual({
        id: expect.any(Number),
        kind: 'over-issuance',
        severity: 'critical',
        subject: 'issuance',
        subjectId: 'ISS-OVER',
        issuanceId: 'ISS-OVER',
        ref: 'ref-ISS-OVER',
        expectedKg: 100_000,
        foundKg: 120_000,
        detail: 'issuance ISS-OVER: 120 t tokenized, beyond its amount of 100 t',
        firstSeenAt: ago(30),
        lastSeenAt: ago(1),
      });
      expect(r.lastRecordedAt).toBe(ago(0));
    },
  },
  {
    name: 'reconciliation: warning findings alone are a warning ledger-mismatch with the steps for their kinds',
    seed: async (exec) => {
      await allSynced(exec);
      await finding(exec, {
        kind: 'retirement-missing',
        severity: 'warning',
        subject: 'operation',
        subjectId: 'op-retire-1',
        minutes: 60,
      });
      await finding(exec, { kind: 'not-in-custody', severity: 'warning', subjectId: 'ISS-C', minutes: 50 });
    },
    codes: ['ledger-mismatch'],
    check: (health) => {
      const p = only(health);
      expect(p.severity).toBe('warning');
      expect(health.status).toBe('warning');
      expect(p.message).toBe(
        '2 open reconciliation findings: not-in-custody 1, retirement-missing 1 (e.g. not-in-custody on issuance ISS-C: not-in-custody found on ISS-C)',
      );
      expect(p.action).toContain('retirement-missing: an approved Retire is not in the operator');
      expect(p.action).toContain('not-in-custody:');
      expect(p.action).not.toContain('over-issuance:');
      expect(health.snapshot.reconciliation.lastRecordedAt).toBe(ago(1));
    },
  },
  {
    name: 'reconciliation: an info finding alone (a deposit not tokenized yet) raises nothing, and is shown',
    seed: async (exec) => {
      await allSynced(exec);
      await finding(exec, {
        kind: 'deposit-not-tokenized',
        severity: 'info',
        subjectId: 'ISS-DEP',
        minutes: 8 * 24 * 60,
      });
    },
    codes: [],
    check: (health) => {
      expect(mismatch(health)).toBeUndefined();
      expect(health.snapshot.reconciliation.open).toEqual([
        { kind: 'deposit-not-tokenized', severity: 'info', findings: 1 },
      ]);
      expect(health.snapshot.reconciliation.recent.map((f) => f.kind)).toEqual(['deposit-not-tokenized']);
    },
  },
  {
    name: 'reconciliation: a decision-overdue finding is the decision-overdue problem only, not raised twice',
    seed: async (exec) => {
      await allSynced(exec);
      await operation(exec, 'op-late', 'accepted', 26 * 60);
      await finding(exec, {
        kind: 'decision-overdue',
        severity: 'warning',
        subject: 'operation',
        subjectId: 'op-late',
        minutes: 60,
      });
    },
    codes: ['decision-overdue'],
    check: (health) => {
      expect(mismatch(health)).toBeUndefined();
      expect(health.snapshot.reconciliation.open).toEqual([
        { kind: 'decision-overdue', severity: 'warning', findings: 1 },
      ]);
    },
  },
  {
    name: 'reconciliation: every finding resolved raises nothing and lists nothing',
    seed: async (exec) => {
      await allSynced(exec);
      await finding(exec, {
        kind: 'outstanding-negative',
        severity: 'critical',
        subjectId: 'ISS-X',
        minutes: 90,
        seenMinutes: 60,
        resolvedMinutes: 45,
      });
    },
    codes: [],
    check: (health) => {
      expect(health.snapshot.reconciliation).toEqual({ open: [], recent: [], lastRecordedAt: ago(45) });
    },
  },
  {
    name: 'reconciliation: many findings are listed up to a bound, the worst first, and counted whole',
    seed: async (exec) => {
      await allSynced(exec);
      for (let i = 0; i < 24; i++) {
        await finding(exec, {
          kind: 'not-in-custody',
          severity: 'warning',
          subjectId: `ISS-${String(i).padStart(2, '0')}-${'x'.repeat(300)}`,
          detail: 'd'.repeat(1_000),
          minutes: 100 - i,
        });
      }
      // The oldest of all, but critical: listed first.
      await finding(exec, {
        kind: 'outstanding-negative',
        severity: 'critical',
        subjectId: 'ISS-NEG',
        minutes: 500,
      });
    },
    codes: ['ledger-mismatch'],
    check: (health) => {
      const p = only(health);
      expect(p.severity).toBe('critical');
      const r = health.snapshot.reconciliation;
      expect(r.open).toEqual([
        { kind: 'outstanding-negative', severity: 'critical', findings: 1 },
        { kind: 'not-in-custody', severity: 'warning', findings: 24 },
      ]);
      expect(r.recent).toHaveLength(20);
      expect(r.recent[0]?.subjectId).toBe('ISS-NEG');
      expect(r.recent[1]?.subjectId).toMatch(/^ISS-23-/);
      expect(r.recent.every((f) => f.detail.length <= 200 && f.subjectId.length <= 200)).toBe(true);
      expect(p.message).toMatch(
        /^25 open reconciliation findings: outstanding-negative 1, not-in-custody 24 \(e\.g\. outstanding-negative on issuance ISS-NEG: /,
      );
      expect(p.message.length).toBeLessThan(1_000);
    },
  },
];

/** An approved report `minutes` before NOW, its body what the marketplace sent. */
async function approved(
  exec: Exec,
  ref: string,
  type: 'Tokenization' | 'Retire',
  tonnes: number,
  minutes: number,
): Promise<void> {
  const body = {
    marketplaceTransactionRef: ref,
    operationType: type,
    issuanceId: 'ISS-R',
    unitId: 'U-R',
    transactionAmount: tonnes,
    transactionUnit: 'tCO2e',
  };
  await operation(exec, ref, 'approved', minutes, { type, body: JSON.stringify(body) });
}

const NO_SERIES = { syncDurations: [], queueDepth: [], recentWebhooks: [] };

/**
 * The same from a real pass over reported operations on the store under test: a Retire of units
 * never tokenized is a critical ledger-mismatch on every surface; once the Tokenization is reported
 * the next pass resolves it and the problem falls to the warning that remains, without a restart.
 */
export function reconcileAgainstPass(open: () => Promise<HealthStore>): void {
  it('a pass over reported operations: every surface shows the finding, and its resolution', async () => {
    const store = await open();
    try {
      await allSynced(store.exec);
      await approved(store.exec, 'op-retire', 'Retire', 5, 30);
      const pass = (now: number) =>
        runPass(
          {
            store: store.scripts,
            settings: { reconcile: CONFIG.reconcile, decisionWarnHours: CONFIG.status.decision_warn_hours },
            now: () => now,
          },
          null,
        );
      const first = await pass(NOW);
      expect(first.opened.map((n) => n.finding.kind)).toContain('outstanding-negative');

      const before = await readHealth(store.reads, CONFIG, NOW);
      const p = mismatch(before);
      expect(p?.severity).toBe('critical');
      expect(before.problems[0]?.code).toBe('ledger-mismatch');
      expect(p?.message).toMatch(/open reconciliation findings?: outstanding-negative \d/);
      expect(p?.message).toContain('(e.g. outstanding-negative on ');
      expect(p?.message).toContain('retired 5 t');
      const r = before.snapshot.reconciliation;
      expect(r.lastRecordedAt).toBe(new Date(NOW).toISOString());
      const negatives = r.open.find((o) => o.kind === 'outstanding-negative');
      expect(negatives?.severity).toBe('critical');

      // The gauges, the command line and the page say the same.
      const metrics = createMetrics();
      updateGauges(metrics, before, NOW);
      const text = await metrics.registry.metrics();
      expect(text).toContain(
        `vcu_sync_reconciliation_findings{kind="outstanding-negative",severity="critical"} ${negatives?.findings}\n`,
      );
      // Every kind has its series, 0 when none is open.
      expect(text).toContain(
        'vcu_sync_reconciliation_findings{kind="over-issuance",severity="critical"} 0\n',
      );
      expect(text).toContain(
        'vcu_sync_reconciliation_findings{kind="deposit-not-tokenized",severity="info"} 0\n',
      );
      expect(text).toContain('vcu_sync_problem{code="ledger-mismatch",severity="critical"} 1\n');
      const cli = formatHealth(before, NOW);
      expect(cli).toContain('[critical] ledger-mismatch: ');
      expect(cli).toMatch(/\nreconciliation: open findings critical \d+ \(outstanding-negative \d+\)/);
      expect(cli).toContain('; last recorded 0s ago');
      const page = renderStatusPage(before, NO_SERIES, NOW);
      const section = page.slice(
        page.indexOf('<h2>Reconciliation</h2>'),
        page.indexOf('<div class="charts">'),
      );
      expect(section).toMatch(
        /<p id="reconciliation-summary">\d+ open findings: \d+ critical \(outstanding-negative/,
      );
      expect(section).toContain(
        '<td data-label="kind"><span class="nowrap">outstanding-negative</span></td>',
      );
      expect(section).toMatch(/<td data-label="detail">[^<]*retired 5 t/);

      // The Tokenization is reported and approved: the next pass resolves the negative balance.
      await approved(store.exec, 'op-tokenize', 'Tokenization', 10, 20);
      const later = NOW + 60_000;
      const second = await pass(later);
      expect(second.resolved.map((n) => n.finding.kind)).toContain('outstanding-negative');
      const after = await readHealth(store.reads, CONFIG, later);
      const q = mismatch(after);
      expect(after.snapshot.reconciliation.open.some((o) => o.severity === 'critical')).toBe(false);
      // What remains is the custody's (the ids were never in custody): a warning, no longer critical.
      expect(q?.severity).toBe('warning');
      expect(q?.message).not.toContain('outstanding-negative');
      expect(after.snapshot.reconciliation.lastRecordedAt).toBe(new Date(later).toISOString());
      updateGauges(metrics, after, later);
      const again = await metrics.registry.metrics();
      expect(again).toContain(
        'vcu_sync_reconciliation_findings{kind="outstanding-negative",severity="critical"} 0\n',
      );
      expect(again).not.toContain('vcu_sync_problem{code="ledger-mismatch",severity="critical"}');
      expect(again).toContain('vcu_sync_problem{code="ledger-mismatch",severity="warning"} 1\n');
    } finally {
      await store.close();
    }
  });
}
