import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type Clock, ManualClock } from '../../src/common/clock.js';
import { loadConfig } from '../../src/config/config.js';
import { DEFAULT_SUBSCRIBER_EVENTS } from '../../src/config/configSubscribers.js';
import { UNIT_FILTER_INDEXES } from '../../src/db/schema/mirror.js';
import { startRun } from '../../src/mirror/backend.js';
import { emptyCounts } from '../../src/mirror/bookkeeping.js';
import { custodyResources, listResources, type TableDef } from '../../src/mirror/resources.js';
import type { FindingSink, PassOutcome } from '../../src/reconcile/pass.js';
import {
  createReconcileComponent,
  type ReconcileComponent,
  type ReconcileTimers,
} from '../../src/reconcile/reconciler.js';
import type { ScriptStore } from '../../src/store/script.js';
import { findingsSink } from '../../src/subscribers/deliverySinks.js';
import type { Subscriber } from '../../src/subscribers/subscribers.js';
import { ManualTimers } from '../helpers/manualTimers.js';
import { until } from '../ops/child.js';
import { capturingLogger } from '../outbox/fixtures.js';
import type { ReconcileUnderTest } from './reconcileDaemonStores.js';

/**
 * The reconciler in the daemon on either store (reconcileDaemon.sqlite.test.ts,
 * reconcileDaemon.pg.test.ts): a full pass at start, then a pass scoped to the issuance a decision,
 * a mirror write or a custody read touched (never a full pass again), a time-bound condition
 * turning on the clock alone, the subscribers' deliveries of findings, a stop during a pass.
 */

export const ME = 'replica-me';
export const T0 = '2026-03-01T12:00:00.000Z';
const HOUR = 3_600_000;
const at = (ms: number) => new Date(ms).toISOString();
const plus = (iso: string, ms: number) => at(Date.parse(iso) + ms);

const CONFIG = loadConfig({ env: { VCU_SYNC_DB: '/nonexistent/unused.db' } });
const ISSUANCES = listResources(CONFIG).issuances;
const UNITS_LOG = listResources(CONFIG).units;
const custody = (kind: 'issuances' | 'units') =>
  custodyResources(CONFIG).find((r) => r.kind === kind) as TableDef;

/** A notification as the marketplace reports it. */
export function notification(
  operationType: string,
  ref: string,
  issuanceId: number,
  unitId: number,
  tonnes: number,
): Record<string, unknown> {
  return {
    marketplaceId: 'mkt-1',
    operationType,
    marketplaceTransactionRef: ref,
    unitId,
    issuanceId,
    transactionAmount: tonnes,
    transactionUnit: 'tCO2e',
    transactionTimestamp: T0,
  };
}

/** Reports operations and has the operator accept and approve each, through the store's transitions, at `when`. */
export async function reportApproved(
  m: ReconcileUnderTest,
  bodies: readonly Record<string, unknown>[],
  when = T0,
): Promise<void> {
  await m.ops.insert(
    bodies.map((b) => ({
      ref: String(b.marketplaceTransactionRef),
      operationType: String(b.operationType),
      orderKey: null,
      body: JSON.stringify(b),
      hash: `h-${String(b.marketplaceTransactionRef)}`,
    })),
    when,
  );
  const claimed = await m.ops.claim({ owner: ME, now: when, leaseUntil: plus(when, HOUR), limit: 100 });
  // Every row, or the case would wait for a finding its operations never made.
  if (claimed.length !== bodies.length)
    throw new Error(`claimed ${claimed.length} of ${bodies.length} operations`);
  for (const row of claimed) {
    const ref = row.marketplaceTransactionRef;
    const attempt = { startedAt: when, durationMs: 1, statusCode: 200, error: null };
    await m.ops.settle({ id: row.id, ref, owner: ME, now: when }, attempt, {
      to: 'accepted',
      response: '{}',
      status: 200,
    });
    await m.ops.recordDecision({ id: row.id, ref, decision: 'approved', reason: null, now: when });
  }
}

/** Writes records to a mirror table as a sync batch does (feed rows and all), at `when`. */
export async function mirrorWrite(
  m: ReconcileUnderTest,
  def: TableDef,
  records: readonly Record<string, unknown>[],
  when = T0,
): Promise<void> {
  const runId = await startRun(m.backend.db, 'custody', 'full', 'manual', when, null);
  await m.backend
    .store(def, () => when)
    .commitBatch({
      runId,
      records: records.map((value) => ({ value, position: null })),
      trackSeen: false,
      checkpoint: null,
      counts: emptyCounts(),
    });
}

/** An issuance of `tonnes` on the public list and in custody, with `units` (of it) in custody. */
export async function heldIssuance(
  m: ReconcileUnderTest,
  issuanceId: number,
  tonnes: number,
  units: readonly number[],
): Promise<void> {
  const issuance = { issuanceId, issuanceAmount: tonnes };
  await mirrorWrite(m, ISSUANCES, [issuance]);
  await mirrorWrite(m, custody('issuances'), [issuance]);
  await mirrorWrite(
    m,
    custody('units'),
    units.map((u) => ({ unitsOperationID: u, unitsIssuanceID: String(issuanceId), unitsQuantity: tonnes })),
  );
}

/** The findings as `kind subject subjectId open|resolved`, by id. */
export async function findings(m: ReconcileUnderTest): Promise<string[]> {
  const rows = await m.query<{ kind: string; subject: string; subject_id: string; resolved_at: unknown }>(
    'SELECT kind, subject, subject_id, resolved_at FROM reconciliation_findings ORDER BY id',
  );
  return rows.map(
    (r) => `${r.kind} ${r.subject} ${r.subject_id} ${r.resolved_at === null ? 'open' : 'resolved'}`,
  );
}

/** A started reconciler and what it did. */
export interface Running {
  component: ReconcileComponent;
  passes: PassOutcome[];
  /** Its log lines, parsed. */
  lines(): Array<Record<string, unknown>>;
  /** The scopes of its passes: 'all' for a full pass, else the issuance ids. */
  scopes(): string[];
}

export interface StartOptions {
  clock?: Clock;
  timers?: ReconcileTimers;
  sink?: FindingSink;
  store?: ScriptStore;
  overrides?: Record<string, unknown>;
  /** (default: 5 ms) */
  debounceMs?: number;
  fullPassBacklog?: number;
}

/** Starts a reconciler on `m` (debounce and retries short: the test waits for conditions, not time). */
export async function startReconciler(m: ReconcileUnderTest, options: StartOptions = {}): Promise<Running> {
  const config = loadConfig({ env: { VCU_SYNC_DB: '/nonexistent/unused.db' }, overrides: options.overrides });
  const { log, lines } = capturingLogger('debug');
  const passes: PassOutcome[] = [];
  const component = createReconcileComponent(
    // A minute after the operations (by default): nothing is overdue mid-decision.
    { config, log, clock: options.clock ?? new ManualClock(Date.parse(T0) + 60_000) },
    {
      store: options.store ?? m.store,
      changes: m.changes,
      sink: options.sink,
      debounceMs: options.debounceMs ?? 5,
      indexWaitMs: 10,
      retryBaseMs: 20,
      retryCapMs: 200,
      timers: options.timers,
      fullPassBacklog: options.fullPassBacklog,
      onPass: (o) => passes.push(o),
    },
  );
  await component.start();
  return {
    component,
    passes,
    lines: () => lines.flatMap((l) => l.split('\n').filter(Boolean)).map((l) => JSON.parse(l)),
    scopes: () => passes.map((p) => (p.scope === null ? 'all' : p.scope.join(','))),
  };
}

/** Registers the cases on `kind`; `open` gives each case an empty store. */
export function reconcileDaemonCases(kind: 'sqlite' | 'postgres', open: () => Promise<ReconcileUnderTest>) {
  describe(`the reconciler in the daemon on ${kind}`, () => {
    let m: ReconcileUnderTest;
    let running: Running | undefined;
    beforeEach(async () => {
      m = await open();
    });
    afterEach(async () => {
      await running?.component.stop();
      running = undefined;
      await m.close();
    });

    const start = async (options: StartOptions = {}) => {
      running = await startReconciler(m, options);
      await until('the first (full) pass', () => running!.passes.length >= 1);
      return running;
    };

    it('a decision is re-evaluated by a pass scoped to its issuance, where its finding opens', async () => {
      await heldIssuance(m, 7, 5, [101]);
      const r = await start();
      expect(r.scopes()).toEqual(['all']);
      expect(await findings(m)).toEqual([]);
      // 10 t tokenized on an issuance of 5 t, approved: over-issuance.
      await reportApproved(m, [notification('Tokenization', 't-7', 7, 101, 10)]);
      await until('the over-issuance', () => r.passes.some((p) => p.opened.length > 0));
      expect(await findings(m)).toEqual(['over-issuance issuance 7 open']);
      // Only the first pass was full: the decision's was scoped to the issuance it touched.
      expect(r.scopes()[0]).toBe('all');
      expect(r.scopes().slice(1)).not.toContain('all');
      const opening = r.passes.find((p) => p.opened.length > 0);
      expect(opening?.scope).toEqual(['7']);
      expect(opening?.opened.map((n) => [n.event, n.finding.kind, n.finding.ref])).toEqual([
        ['reconciliation.finding', 'over-issuance', 't-7'],
      ]);
      const line = r.lines().find((l) => l.event === 'reconcile.finding');
      expect(line).toMatchObject({
        level: 'warn',
        kind: 'over-issuance',
        severity: 'critical',
        subjectId: '7',
      });
      expect(r.lines().filter((l) => l.event === 'reconcile.pass' && l.scope === 1).length).toBeGreaterThan(
        0,
      );
    });

    it("while the units log's filter indexes are missing (a first load), a decision's pass waits for them, then runs", async () => {
      await heldIssuance(m, 7, 5, [101]);
      const r = await start();
      for (const spec of UNIT_FILTER_INDEXES) await m.query(`DROP INDEX "${spec.name}"`);
      await reportApproved(m, [notification('Tokenization', 't-7', 7, 101, 10)]);
      // It looks again and again (the decision read, the agenda kept), and passes over nothing.
      const waits = () => r.lines().filter((l) => l.event === 'reconcile.waiting').length;
      await until('the reconciler waiting twice', () => waits() >= 2);
      expect(r.passes).toHaveLength(1);
      expect(await findings(m)).toEqual([]);
      // The load's end builds them: the pass that was waiting runs, scoped to the decision's issuance.
      for (const spec of UNIT_FILTER_INDEXES)
        await m.query(
          `CREATE INDEX "${spec.name}" ON unit_operations (${spec.on.map((c) => `"${c}"`).join(', ')})`,
        );
      await until('the over-issuance', () => r.passes.some((p) => p.opened.length > 0));
      expect(await findings(m)).toEqual(['over-issuance issuance 7 open']);
      expect(r.passes.find((p) => p.opened.length > 0)?.scope).toEqual(['7']);
    });

    it('a mirror write re-evaluates its issuance: the finding opens, then resolves when the amount is back', async () => {
      await heldIssuance(m, 8, 20, [108]);
      await reportApproved(m, [notification('Tokenization', 't-8', 8, 108, 10)]);
      const r = await start();
      expect(await findings(m)).toEqual([]);
      // The registry now shows 5 t: a sync page writes it.
      await mirrorWrite(m, ISSUANCES, [{ issuanceId: 8, issuanceAmount: 5 }]);
      await until('the over-issuance', () => r.passes.some((p) => p.opened.length > 0));
      expect(await findings(m)).toEqual(['over-issuance issuance 8 open']);
      await mirrorWrite(m, ISSUANCES, [{ issuanceId: 8, issuanceAmount: 20 }]);
      await until('its resolution', () => r.passes.some((p) => p.resolved.length > 0));
      expect(r.scopes().slice(1)).not.toContain('all');
      expect(r.scopes()).toContain('8');
      expect(r.lines().find((l) => l.event === 'reconcile.resolved')).toMatchObject({
        level: 'info',
        kind: 'over-issuance',
        subjectId: '8',
      });
    });

    it('a custody read ending a unit: the operation reported after its end is not-in-custody', async () => {
      await heldIssuance(m, 9, 100, [109]);
      await reportApproved(m, [notification('Tokenization', 't-9', 9, 109, 10)]);
      const r = await start();
      expect(await findings(m)).toEqual([]);
      // The custody read answers 404 for the unit: its custody ended an hour before t-9 was reported.
      const def = custody('units');
      const runId = await startRun(m.backend.db, 'custody', 'full', 'manual', T0, null);
      const ended = plus(T0, -HOUR);
      expect(await m.backend.store(def, () => ended).endCustody(runId, 'units', '109', emptyCounts())).toBe(
        true,
      );
      await until('not-in-custody', () => r.passes.some((p) => p.opened.length > 0));
      expect(await findings(m)).toEqual(['not-in-custody unit 109 open']);
      // The unit led to its issuance through the ledger: a pass over issuance 9 found it.
      expect(r.passes.find((p) => p.opened.length > 0)?.scope).toEqual(['9']);
    });

    it('a feed backlog past fullPassBacklog rows is one full pass, not a mapping of every row', async () => {
      const r = await start({ fullPassBacklog: 3 });
      await heldIssuance(m, 13, 100, [113, 114, 115, 116]);
      // The four units of custody come in one commit: 3 rows or more waiting are a full pass.
      await until('a full pass after the backlog', () => r.scopes().slice(1).includes('all'));
      expect(await findings(m)).toEqual([]);
    });

    it('a Retire with no retirement in the log: no finding until the clock passes the window, then one with no new event', async () => {
      const clock = new ManualClock(Date.parse(T0) + HOUR);
      const timers = new ManualTimers(clock);
      await heldIssuance(m, 10, 100, [110]);
      await reportApproved(m, [
        notification('Tokenization', 't-10a', 10, 110, 10),
        notification('retire', 't-10b', 10, 110, 10),
      ]);
      // Full passes far apart: the pass that finds it must be the due one.
      const r = await start({ clock, timers, overrides: { 'reconcile.full_every_hours': 10_000 } });
      expect(await findings(m)).toEqual([]);
      expect(r.passes[0]?.dueAt.get('10')).toBe(Date.parse(T0) + 72 * HOUR);
      await until('the reconciler waiting on its timer', () => timers.size > 0);
      const feedBefore = await m.query<{ n: unknown }>('SELECT count(*) AS n FROM changes');
      clock.set(Date.parse(T0) + 72 * HOUR + 1);
      await timers.advance(0);
      await until('retirement-missing', () => r.passes.some((p) => p.opened.length > 0));
      expect(await findings(m)).toEqual(['retirement-missing operation t-10b open']);
      expect(r.scopes()).toEqual(['all', '10']);
      // Nothing but the finding's own feed row was written meanwhile.
      const feedAfter = await m.query<{ n: unknown }>(
        "SELECT count(*) AS n FROM changes WHERE resource <> 'reconciliation_findings'",
      );
      expect(Number(feedAfter[0]?.n)).toBe(Number(feedBefore[0]?.n));
      // The operator's log then shows the retirement (a sync page inserts it): the log grew, and the
      // issuance with a retirement missing is looked at again, by a pass scoped to it.
      await mirrorWrite(m, UNITS_LOG, [
        { unitsOperationID: 'log-10', unitsIssuanceID: '10', unitsQuantity: 10, unitsStatus: 'Retired' },
      ]);
      await timers.advance(0);
      await until('its resolution', () => r.passes.some((p) => p.resolved.length > 0));
      expect(await findings(m)).toEqual(['retirement-missing operation t-10b resolved']);
      expect(r.scopes()).toEqual(['all', '10', '10']);
    });

    it('a subscriber asking for reconciliation events gets each; one asking for the defaults gets none', async () => {
      const audit: Subscriber = {
        key: 'audit',
        url: 'http://127.0.0.1:1/hook',
        secret: 'whsec_x',
        events: ['reconciliation.finding', 'reconciliation.resolved'],
      };
      const apps: Subscriber = { ...audit, key: 'apps', events: [...DEFAULT_SUBSCRIBER_EVENTS] };
      expect(findingsSink([apps])).toBeUndefined();
      await heldIssuance(m, 12, 20, [112]);
      await reportApproved(m, [notification('Tokenization', 't-12', 12, 112, 10)]);
      const r = await start({ sink: findingsSink([audit, apps]) });
      await mirrorWrite(m, ISSUANCES, [{ issuanceId: 12, issuanceAmount: 5 }]);
      await until('the over-issuance', () => r.passes.some((p) => p.opened.length > 0));
      await mirrorWrite(m, ISSUANCES, [{ issuanceId: 12, issuanceAmount: 20 }]);
      await until('its resolution', () => r.passes.some((p) => p.resolved.length > 0));
      const [finding] = await m.query<{ id: unknown; last_seen_at: unknown }>(
        'SELECT id FROM reconciliation_findings',
      );
      const id = Number(finding?.id);
      const deliveries = await m.query<{ subscriber: string; event_type: string; ref: string; body: string }>(
        'SELECT subscriber, event_type, ref, body FROM deliveries ORDER BY id',
      );
      expect(deliveries.map((d) => [d.subscriber, d.event_type, d.ref])).toEqual([
        ['audit', 'reconciliation.finding', `reconciliation_findings:${id}`],
        ['audit', 'reconciliation.resolved', `reconciliation_findings:${id}`],
      ]);
      const [opened, resolved] = deliveries.map((d) => JSON.parse(d.body));
      expect(opened).toEqual({
        type: 'reconciliation.finding',
        timestamp: opened.data.at,
        data: {
          id,
          kind: 'over-issuance',
          severity: 'critical',
          subject: 'issuance',
          subjectId: '12',
          issuanceId: '12',
          unitId: null,
          ref: 't-12',
          expectedKg: 5000,
          foundKg: 10000,
          detail: 'issuance 12: 10 t tokenized, beyond its amount of 5 t',
          at: opened.data.at,
        },
      });
      expect(resolved).toMatchObject({
        type: 'reconciliation.resolved',
        data: { id, kind: 'over-issuance' },
      });
    });

    it('stopped while a pass runs: the pass finishes and commits, the loop ends', async () => {
      await heldIssuance(m, 11, 5, [111]);
      await reportApproved(m, [notification('Tokenization', 't-11', 11, 111, 10)]);
      let entered = false;
      let release!: () => void;
      const gate = new Promise<void>((resolve) => {
        release = resolve;
      });
      // The store as the reconciler gets it, its first transaction held until the test lets it go.
      const gated: ScriptStore = {
        dialect: m.store.dialect,
        read: (s) => m.store.read(s),
        async transaction(script, options) {
          entered = true;
          await gate;
          return m.store.transaction(script, options);
        },
      };
      running = await startReconciler(m, { store: gated });
      await until('a pass under way', () => entered);
      let stopped = false;
      const stopping = running.component.stop().then(() => {
        stopped = true;
      });
      await new Promise((resolve) => setImmediate(resolve));
      expect(stopped).toBe(false);
      release();
      await stopping;
      expect(running.passes.map((p) => p.scope)).toEqual([null]);
      expect(await findings(m)).toEqual(['over-issuance issuance 11 open']);
      expect(
        running.lines().filter((l) => l.event === 'reconcile.failed' || l.event === 'reconcile.crashed'),
      ).toEqual([]);
      running = undefined;
    });
  });
}
