import { describe, expect, it } from 'vitest';
import { renderStatusPage } from '../../src/api/statusPage.js';
import { loadConfig } from '../../src/config/config.js';
import { formatHealth } from '../../src/health/format.js';
import { judgeHealth } from '../../src/health/readHealth.js';
import { severityOf } from '../../src/health/reconcileReads.js';
import { judge, type RuleInputs } from '../../src/health/rules.js';
import {
  type HealthSnapshot,
  NO_FAULTS,
  type ReconciliationFindingFacts,
  unreadableSnapshot,
} from '../../src/health/snapshot.js';

/**
 * `ledger-mismatch` as a table: which open findings raise it and how severe (critical on a critical
 * finding; a warning on a warning one other than decision-overdue, which is its own problem; nothing
 * on info alone; nothing while `reconcile.enabled` is off), and the reconciliation on the status
 * page and the status command, escaped and bounded.
 */

const NOW = Date.parse('2026-03-02T12:00:00.000Z');
const ago = (minutes: number) => new Date(NOW - minutes * 60_000).toISOString();
const INPUTS: RuleInputs = {
  now: NOW,
  periods: {},
  stalePeriods: 3,
  decisionWarnHours: 24,
  decisionWarnCount: 100,
};
const NO_SERIES = { syncDurations: [], queueDepth: [], recentWebhooks: [] };
const CONFIG = loadConfig({ env: { VCU_SYNC_DB: '/nonexistent/unused.db' } });

type Open = HealthSnapshot['reconciliation']['open'][number];

const found = (over: Partial<ReconciliationFindingFacts>): ReconciliationFindingFacts => ({
  id: 1,
  kind: 'not-in-custody',
  severity: 'warning',
  subject: 'issuance',
  subjectId: 'ISS-1',
  issuanceId: 'ISS-1',
  ref: 'op-1',
  expectedKg: null,
  foundKg: null,
  detail: '1 operation(s) reported on issuance ISS-1, which the custody data does not show in custody',
  firstSeenAt: ago(30),
  lastSeenAt: ago(1),
  ...over,
});

/** The empty snapshot, readable, with these findings open (the tallies in the reads' order). */
function snapshotWith(open: Open[], recent: ReconciliationFindingFacts[] = []): HealthSnapshot {
  return {
    ...unreadableSnapshot({ ...NO_FAULTS }),
    reconciliation: { open, recent, lastRecordedAt: ago(1) },
  };
}

const mismatch = (snapshot: HealthSnapshot, inputs: RuleInputs = INPUTS) =>
  judge(snapshot, inputs).problems.filter((p) => p.code === 'ledger-mismatch');

const CASES: Array<{ name: string; open: Open[]; severity: 'critical' | 'warning' | null }> = [
  {
    name: 'a critical finding open',
    open: [{ kind: 'outstanding-negative', severity: 'critical', findings: 1 }],
    severity: 'critical',
  },
  {
    name: 'a critical finding beside warnings and info',
    open: [
      { kind: 'over-issuance', severity: 'critical', findings: 2 },
      { kind: 'retirement-missing', severity: 'warning', findings: 3 },
      { kind: 'deposit-not-tokenized', severity: 'info', findings: 9 },
    ],
    severity: 'critical',
  },
  {
    name: 'warning findings only',
    open: [
      { kind: 'not-in-custody', severity: 'warning', findings: 1 },
      { kind: 'retirement-missing', severity: 'warning', findings: 1 },
    ],
    severity: 'warning',
  },
  {
    name: 'info findings only (deposits not tokenized yet)',
    open: [{ kind: 'deposit-not-tokenized', severity: 'info', findings: 40 }],
    severity: null,
  },
  {
    name: 'decision-overdue findings only (the problem decision-overdue says it)',
    open: [{ kind: 'decision-overdue', severity: 'warning', findings: 5 }],
    severity: null,
  },
  {
    name: 'decision-overdue and info findings',
    open: [
      { kind: 'decision-overdue', severity: 'warning', findings: 5 },
      { kind: 'deposit-not-tokenized', severity: 'info', findings: 2 },
    ],
    severity: null,
  },
  {
    name: 'a kind this version does not know, recorded critical by a newer one',
    open: [{ kind: 'double-registration', severity: 'critical', findings: 1 }],
    severity: 'critical',
  },
  { name: 'no finding open', open: [], severity: null },
];

describe('ledger-mismatch', () => {
  it.each(CASES)('$name', ({ open, severity }) => {
    const problems = mismatch(snapshotWith(open));
    if (severity === null) {
      expect(problems).toEqual([]);
      return;
    }
    expect(problems).toHaveLength(1);
    expect(problems[0]?.severity).toBe(severity);
    // Counted: every critical finding, every warning one but decision-overdue; info never.
    const counted = open.filter(
      (o) => o.severity === 'critical' || (o.severity === 'warning' && o.kind !== 'decision-overdue'),
    );
    const total = counted.reduce((n, o) => n + o.findings, 0);
    expect(problems[0]?.message).toBe(
      `${total} open reconciliation finding${total === 1 ? '' : 's'}: ${counted.map((o) => `${o.kind} ${o.findings}`).join(', ')}`,
    );
    expect(problems[0]?.action).toMatch(/^read the findings with their figures: vcu-sync reconcile /);
    for (const o of counted) {
      if (o.kind === 'double-registration') expect(problems[0]?.action).not.toContain(`${o.kind}:`);
      else expect(problems[0]?.action).toContain(`${o.kind}: `);
    }
    expect(problems[0]?.action).not.toContain('deposit-not-tokenized');
  });

  it('names the worst finding listed as its example, skipping those it does not count', () => {
    const snapshot = snapshotWith(
      [
        { kind: 'decision-overdue', severity: 'warning', findings: 1 },
        { kind: 'not-in-custody', severity: 'warning', findings: 1 },
      ],
      [
        found({ kind: 'decision-overdue', subject: 'operation', subjectId: 'op-late', detail: 'late' }),
        found({ subjectId: 'ISS-7', detail: 'not held' }),
      ],
    );
    expect(mismatch(snapshot)[0]?.message).toBe(
      '1 open reconciliation finding: not-in-custody 1 (e.g. not-in-custody on issuance ISS-7: not held)',
    );
  });

  it('raises nothing while reconcile.enabled is off: no pass runs to keep the findings current', () => {
    const snapshot = snapshotWith([{ kind: 'outstanding-negative', severity: 'critical', findings: 1 }]);
    expect(mismatch(snapshot, { ...INPUTS, reconcileEnabled: false })).toEqual([]);
    expect(mismatch(snapshot, { ...INPUTS, reconcileEnabled: true })).toHaveLength(1);
    // status reads the key: the same snapshot judged under each setting.
    const off = loadConfig({
      env: { VCU_SYNC_DB: '/nonexistent/unused.db' },
      overrides: { 'reconcile.enabled': false },
    });
    const codes = (config: typeof CONFIG) =>
      judgeHealth(snapshot, config, { kind: 'sqlite', location: '/x.db' }, NOW, null).problems.map(
        (p) => p.code,
      );
    expect(codes(off)).toEqual([]);
    expect(codes(CONFIG)).toEqual(['ledger-mismatch']);
  });

  it('reads a stored severity it does not know as a warning: never silenced, never paging', () => {
    expect(severityOf('critical')).toBe('critical');
    expect(severityOf('info')).toBe('info');
    expect(severityOf('severe')).toBe('warning');
  });
});

describe('the reconciliation where people look', () => {
  const snapshot = snapshotWith(
    [
      { kind: 'over-issuance', severity: 'critical', findings: 1 },
      { kind: 'not-in-custody', severity: 'warning', findings: 2 },
      { kind: 'deposit-not-tokenized', severity: 'info', findings: 1 },
    ],
    [
      found({
        id: 3,
        kind: 'over-issuance',
        severity: 'critical',
        subjectId: 'ISS-<b>9</b>',
        detail: 'issuance ISS-<b>9</b>: 120 t tokenized, beyond its amount of 100 t <script>x</script>',
        firstSeenAt: ago(90),
      }),
      found({ id: 2, subjectId: 'ISS-2' }),
    ],
  );
  const health = judgeHealth(snapshot, CONFIG, { kind: 'sqlite', location: '/x.db' }, NOW, null);

  it('the status page: a Reconciliation section, by severity, the findings escaped, more than listed said', () => {
    const page = renderStatusPage(health, NO_SERIES, NOW);
    const section = page.slice(page.indexOf('<h2>Reconciliation</h2>'), page.indexOf('<div class="charts">'));
    expect(section).toContain(
      '<p id="reconciliation-summary">4 open findings: 1 critical (over-issuance 1), 2 warning (not-in-custody 2), 1 info (deposit-not-tokenized 1) (the worst 2 below); last recorded <time',
    );
    expect(section).toContain('<code>vcu-sync reconcile</code>');
    expect((section.match(/<tr><td/g) ?? []).length).toBe(2);
    expect(section).toContain('<td data-label="subject">issuance ISS-&lt;b&gt;9&lt;/b&gt;</td>');
    expect(section).toContain('&lt;script&gt;x&lt;/script&gt;');
    expect(section).not.toContain('<script>');
    expect(section).toMatch(/<td data-label="first seen"><time [^>]*>90m ago<\/time><\/td>/);
    // The problem is on the page too, first: it is the only one, and critical.
    expect(page).toMatch(/<section id="first" class="critical">[\s\S]*runbook: ledger-mismatch/);
  });

  it('vcu-sync status: the problem and the reconciliation line', () => {
    const text = formatHealth(health, NOW);
    expect(text).toMatch(/^vcu-sync CRITICAL: 1 problem\n/);
    expect(text).toContain('  [critical] ledger-mismatch: 3 open reconciliation findings: over-issuance 1, ');
    expect(text).toContain(
      '\nreconciliation: open findings critical 1 (over-issuance 1); warning 2 (not-in-custody 2); info 1 (deposit-not-tokenized 1); last recorded 60s ago\n',
    );
  });

  it('with nothing found: no problem, "no open findings", and never recorded before a first pass', () => {
    const quiet = judgeHealth(
      { ...snapshotWith([]), reconciliation: { open: [], recent: [], lastRecordedAt: null } },
      CONFIG,
      { kind: 'sqlite', location: '/x.db' },
      NOW,
      null,
    );
    expect(formatHealth(quiet, NOW)).toContain('\nreconciliation: no open findings; last recorded never\n');
    const page = renderStatusPage(quiet, NO_SERIES, NOW);
    expect(page).toContain('<p id="reconciliation-summary">0 open findings; last recorded never.');
    expect(page).not.toContain('<table id="reconciliation"');
  });

  it('an unreadable database shows no reconciliation figures it could not read', () => {
    const unreadable = judgeHealth(
      unreadableSnapshot({ ...NO_FAULTS, readError: 'SQLITE_IOERR: disk I/O error' }),
      CONFIG,
      { kind: 'sqlite', location: '/x.db' },
      NOW,
      null,
    );
    expect(formatHealth(unreadable, NOW)).not.toContain('reconciliation');
    expect(renderStatusPage(unreadable, NO_SERIES, NOW)).not.toContain('Reconciliation');
  });
});
