import { describe, expect, it } from 'vitest';
import { demoCandidates } from '../../src/commands/demoBooks.js';
import {
  type DemoPlan,
  demoOperation,
  doubleTokenization,
  lostRetirement,
  planDemo,
  planPairs,
  retireBeyond,
  STREAM_PAIRS,
  setupOperations,
  transferAfterDrop,
} from '../../src/commands/demoOperations.js';
import { reconcileSchema } from '../../src/config/configReconcile.js';
import { ledgerEntryOf } from '../../src/outbox/ledgerEntry.js';
import { validateNotification } from '../../src/outbox/validate.js';
import { balanceSheets, balancesOf, type LedgerFact } from '../../src/reconcile/balances.js';
import type { CustodyState } from '../../src/reconcile/findingKinds.js';
import { decideFindings, type LogRetirement } from '../../src/reconcile/findings.js';
import { planBooking, Registry } from '../../src/simulator/index.js';

/**
 * The demo's operations against the core's rules, without a daemon: the stream's books stay
 * consistent at every step, and each injected inconsistency raises exactly the finding naming it.
 * The simulator's side is what its books do (planBooking): an approved Retire is logged in tonnes.
 */

// The demo's simulator (src/commands/demo.ts): same sizes, the default seed.
const registry = new Registry({ seed: 1, projects: 120, issuances: 600, units: 20_000 });
const plan: DemoPlan = planDemo(demoCandidates(registry));
const MARKET = 'demo-marketplace';
const HOUR = 3_600_000;
const T0 = Date.parse('2026-03-01T00:00:00.000Z');
const settings = { reconcile: reconcileSchema.parse({}), decisionWarnHours: 24 };

/** Reported operations, decided in order by the simulator's rule (`reject-` refs rejected), one a second. */
class SimulatedBooks {
  readonly facts: LedgerFact[] = [];
  readonly log: LogRetirement[] = [];
  private loseNext = 0;

  report(body: Record<string, unknown>): void {
    // Every body the demo sends passes the daemon's own validation.
    expect(validateNotification(body).ok, JSON.stringify(body)).toBe(true);
    const ref = String(body.marketplaceTransactionRef);
    const at = new Date(T0 + this.facts.length * 1000).toISOString();
    const approved = !ref.startsWith('reject-');
    this.facts.push({
      outboxId: this.facts.length + 1,
      ...ledgerEntryOf(JSON.stringify(body)),
      state: approved ? 'approved' : 'rejected',
      ref,
      createdAt: at,
      acceptedAt: at,
      decidedAt: at,
    });
    const booking = planBooking(body, at.slice(0, 10));
    if (!approved || booking.action !== 'log' || booking.kind !== 'retire') return;
    if (this.loseNext > 0) {
      this.loseNext--;
      return;
    }
    this.log.push({
      id: `log-${this.log.length}`,
      issuanceId: String(booking.fields.unitsIssuanceID),
      quantityKg: Math.round(Number(booking.fields.unitsQuantity) * 1000 * 1000) / 1000,
    });
  }

  loseRetirements(n: number): void {
    this.loseNext += n;
  }

  /** The findings the core decides `afterHours` past the last report, with custody as given. */
  findings(custody: (kind: 'issuance' | 'unit', id: string) => CustodyState, afterHours = 100) {
    const balances = balancesOf(this.facts);
    const amounts = new Map(planPairs(plan).map((p) => [String(p.issuanceId), p.amountT * 1000]));
    const sheets = balanceSheets(balances, {
      issuanceAmounts: amounts,
      custodyIssuances: new Map([...balances.issuances.keys()].map((id) => [id, custody('issuance', id)])),
      custodyUnits: new Map([...balances.units.keys()].map((id) => [id, custody('unit', id)])),
      log: new Map(),
    });
    const now = T0 + this.facts.length * 1000 + afterHours * HOUR;
    return decideFindings(sheets, this.facts, this.log, [], settings, now).findings;
  }
}

const held = (): CustodyState => ({ state: 'held' });

describe('the demo plan', () => {
  it('names distinct records the simulator has: each unit operation names its issuance, the doubled one is the smallest', () => {
    const pairs = planPairs(plan);
    expect(pairs).toHaveLength(STREAM_PAIRS + 4);
    expect(new Set(pairs.map((p) => p.issuanceId)).size).toBe(pairs.length);
    for (const p of pairs) {
      expect(registry.get('issuances', p.issuanceId)?.issuanceAmount).toBe(p.amountT);
      expect(registry.get('units', p.unitId)?.unitsIssuanceID).toBe(String(p.issuanceId));
    }
    expect(Math.min(...pairs.map((p) => p.amountT))).toBe(plan.doubled.amountT);
    // The stream's issuances hold a stream of days: 18 t at most per cycle of 8 s on each of them.
    const cyclesPerDay = 86_400 / 8 / STREAM_PAIRS;
    for (const p of plan.stream) expect(p.amountT).toBeGreaterThan(18 * cyclesPerDay);
  });
});

describe('the demo stream', () => {
  it('keeps consistent books at every step: nothing below zero, every retirement logged, no finding', () => {
    const books = new SimulatedBooks();
    for (const body of setupOperations(plan, MARKET, new Date(T0))) books.report(body);
    for (let n = 0; n < 4 * STREAM_PAIRS * 12; n++) {
      books.report(demoOperation(n, MARKET, new Date(T0 + n * 2000), plan));
      const { issuances, units } = balancesOf(books.facts);
      for (const b of issuances.values()) expect(b.outstandingKg).toBeGreaterThanOrEqual(0);
      for (const u of units.values()) expect(u.balance.outstandingKg).toBeGreaterThanOrEqual(0);
    }
    // It shows a rejection, and every kind of operation.
    expect(books.facts.filter((f) => f.state === 'rejected').length).toBeGreaterThan(0);
    expect(new Set(books.facts.map((f) => f.kind))).toEqual(
      new Set(['tokenization', 'transfer', 'retire', 'detokenization']),
    );
    expect(books.findings(held)).toEqual([]);
  });

  it('with the four injections, raises exactly the four findings that name them', () => {
    const books = new SimulatedBooks();
    for (const body of setupOperations(plan, MARKET, new Date(T0))) books.report(body);
    for (let n = 0; n < 4 * STREAM_PAIRS * 2; n++) books.report(demoOperation(n, MARKET, new Date(T0), plan));
    books.loseRetirements(1);
    const lost = lostRetirement(plan, MARKET, new Date(T0));
    books.report(lost);
    books.report(retireBeyond(plan, MARKET, new Date(T0)));
    for (const body of doubleTokenization(plan, MARKET, new Date(T0))) books.report(body);
    // Custody of the dropped issuance ends (read) before the Transfer is reported on it.
    const endedAt = new Date(T0 + books.facts.length * 1000 - 1).toISOString();
    books.report(transferAfterDrop(plan, MARKET, new Date(T0)));
    const dropped = String(plan.dropped.issuanceId);
    const findings = books.findings((kind, id) =>
      kind === 'issuance' && id === dropped ? { state: 'ended', at: endedAt } : held(),
    );
    expect(
      findings
        .map((f) => ({ kind: f.kind, subject: f.subject, id: f.subjectId }))
        .sort((a, b) => a.kind.localeCompare(b.kind)),
    ).toEqual([
      { kind: 'not-in-custody', subject: 'issuance', id: dropped },
      { kind: 'outstanding-negative', subject: 'issuance', id: String(plan.beyond.issuanceId) },
      { kind: 'over-issuance', subject: 'issuance', id: String(plan.doubled.issuanceId) },
      { kind: 'retirement-missing', subject: 'operation', id: String(lost.marketplaceTransactionRef) },
    ]);
    // Within the retirement window the lost one is not a finding yet.
    expect(books.findings(held, 0).map((f) => f.kind)).not.toContain('retirement-missing');
  });
});
