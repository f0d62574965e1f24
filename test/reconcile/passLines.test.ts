import { describe, expect, it } from 'vitest';
import type { Finding } from '../../src/reconcile/findingKinds.js';
import type { FindingNotice, PassOutcome } from '../../src/reconcile/pass.js';
import { MAX_NOTICE_LINES, passLines } from '../../src/reconcile/passLog.js';
import { touchedKeys } from '../../src/reconcile/touched.js';
import { findingDeliveryRows } from '../../src/subscribers/deliverySinks.js';
import type { Subscriber } from '../../src/subscribers/subscribers.js';

/**
 * The reconciler's pure edges: its log lines per pass (bounded however many findings a pass opens),
 * the feed rows it maps to issuances, and the deliveries a finding owes its subscribers.
 */

const AT = '2026-03-01T12:00:00.000Z';

function notice(id: number, event: FindingNotice['event'], severity: Finding['severity']): FindingNotice {
  return {
    id,
    event,
    at: AT,
    finding: {
      kind: severity === 'info' ? 'deposit-not-tokenized' : 'over-issuance',
      subject: 'issuance',
      subjectId: String(id),
      issuanceId: String(id),
      unitId: null,
      ref: `r-${id}`,
      severity,
      expectedKg: 1000,
      foundKg: 2000,
      detail: `issuance ${id}: something`,
    },
  };
}

function outcome(opened: FindingNotice[], resolved: FindingNotice[] = []): PassOutcome {
  return {
    scope: ['1'],
    operations: 3,
    sheets: 2,
    open: opened.length,
    opened,
    resolved,
    dueAt: new Map(),
    ledgered: new Set(),
  };
}

describe('the reconciler log lines of a pass', () => {
  it('one line per finding: a warning, info for an info finding; resolved at info', () => {
    const lines = passLines(
      outcome(
        [notice(1, 'reconciliation.finding', 'critical'), notice(2, 'reconciliation.finding', 'info')],
        [notice(3, 'reconciliation.resolved', 'warning')],
      ),
      12,
    );
    expect(lines.map((l) => [l.level, l.fields.event, l.fields.id ?? l.fields.scope])).toEqual([
      ['debug', 'reconcile.pass', 1],
      ['warn', 'reconcile.finding', 1],
      ['info', 'reconcile.finding', 2],
      ['info', 'reconcile.resolved', 3],
    ]);
    expect(lines[0]?.fields).toMatchObject({ operations: 3, sheets: 2, opened: 2, resolved: 1, ms: 12 });
  });

  it('at most MAX_NOTICE_LINES findings each, then one line with how many more by kind', () => {
    const many = (event: FindingNotice['event']) =>
      Array.from({ length: MAX_NOTICE_LINES + 5 }, (_, i) => notice(i + 1, event, 'critical'));
    const lines = passLines(outcome(many('reconciliation.finding'), many('reconciliation.resolved')), 1);
    const count = (event: string) => lines.filter((l) => l.fields.event === event).length;
    expect(count('reconcile.finding')).toBe(MAX_NOTICE_LINES);
    expect(count('reconcile.resolved')).toBe(MAX_NOTICE_LINES);
    expect(lines.find((l) => l.fields.event === 'reconcile.finding.more')?.fields).toMatchObject({
      more: 5,
      kinds: { 'over-issuance': 5 },
    });
    expect(lines.find((l) => l.fields.event === 'reconcile.resolved.more')?.fields).toMatchObject({
      more: 5,
    });
    expect(lines).toHaveLength(1 + 2 * (MAX_NOTICE_LINES + 1));
  });
});

describe('the feed rows the reconciler reads', () => {
  it('sorts record ids by how they lead to an issuance, ignoring its own findings and projects', () => {
    const keys = touchedKeys([
      { resource: 'issuances', record_id: '7', kind: 'update' },
      { resource: 'custody_issuances', record_id: '8', kind: 'insert' },
      { resource: 'unit_operations', record_id: 'u-1', kind: 'update' },
      { resource: 'unit_operations', record_id: 'u-2', kind: 'remove' },
      { resource: 'custody_units', record_id: '101', kind: 'insert' },
      { resource: 'operations', record_id: 't-1', kind: 'approved' },
      { resource: 'reconciliation_findings', record_id: '1', kind: 'finding' },
      { resource: 'projects', record_id: 'p-1', kind: 'insert' },
    ]);
    expect(keys).toEqual({
      issuances: new Set(['7', '8']),
      logEntries: new Set(['u-1', 'u-2']),
      logGrew: false,
      units: new Set(['101']),
      refs: new Set(['t-1']),
    });
  });

  it('a log entry inserted is not looked up one by one: the log grew, which only a missing retirement cares about', () => {
    const keys = touchedKeys([
      { resource: 'unit_operations', record_id: 'u-1', kind: 'insert' },
      { resource: 'unit_operations', record_id: 'u-2', kind: 'insert' },
    ]);
    expect(keys.logEntries).toEqual(new Set());
    expect(keys.logGrew).toBe(true);
  });
});

describe('the deliveries a finding owes', () => {
  const sub = (key: string, events: Subscriber['events']): Subscriber => ({
    key,
    url: 'http://127.0.0.1:1/hook',
    secret: 'whsec_x',
    events,
  });

  it('one per subscriber asking for the event, keyed by the finding', () => {
    const rows = findingDeliveryRows(
      [
        sub('audit', ['reconciliation.finding']),
        sub('both', ['reconciliation.finding', 'reconciliation.resolved']),
      ],
      [notice(4, 'reconciliation.finding', 'critical'), notice(4, 'reconciliation.resolved', 'critical')],
    );
    expect(rows.map((r) => [r.subscriber, r.type, r.ref, r.at])).toEqual([
      ['audit', 'reconciliation.finding', 'reconciliation_findings:4', AT],
      ['both', 'reconciliation.finding', 'reconciliation_findings:4', AT],
      ['both', 'reconciliation.resolved', 'reconciliation_findings:4', AT],
    ]);
    expect(new Set(rows.map((r) => r.webhookId)).size).toBe(3);
    expect(JSON.parse(rows[0]?.body ?? '')).toMatchObject({
      type: 'reconciliation.finding',
      timestamp: AT,
      data: { id: 4, kind: 'over-issuance', expectedKg: 1000, foundKg: 2000, at: AT },
    });
  });
});
