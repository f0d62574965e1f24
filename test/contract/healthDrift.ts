import { expect, it } from 'vitest';
import { renderStatusPage } from '../../src/api/statusPage.js';
import { updateGauges } from '../../src/api/statusRoutes.js';
import { createMetrics } from '../../src/common/metrics.js';
import { formatHealth } from '../../src/health/format.js';
import { readHealth } from '../../src/health/readHealth.js';
import { runSync } from '../../src/mirror/syncRun.js';
import { harness, noSleep } from '../mirror/harness.js';
import { ago, type Exec, type Health, type HealthCase, type HealthStore, syncRun } from './healthStores.js';

/**
 * The health snapshot's schema-drift situations (issue 28), seeded as rows with backdated times so
 * the `sync.schema.problem_hours` window (24 h by default) is tested without waiting: the
 * `upstream-schema-changed` problem, its severity and words, and the figures the gauges read.
 */

/** A `schema_changes` row first seen `minutes` before NOW. */
export async function schemaChange(
  exec: Exec,
  change: {
    resource: string;
    field: string;
    kind: string;
    before?: string | null;
    after: string;
    mapped?: boolean;
    minutes: number;
    count?: number;
  },
): Promise<void> {
  await exec(
    `INSERT INTO schema_changes (resource, field, kind, before, after, mapped, first_seen_at, last_seen_at, example_key, count, run_id)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL)`,
    [
      change.resource,
      change.field,
      change.kind,
      change.before ?? null,
      change.after,
      change.mapped ?? false,
      ago(change.minutes),
      ago(Math.max(0, change.minutes - 5)),
      `key-${change.field}`,
      change.count ?? 1,
    ],
  );
}

/** A quarantine row `minutes` before NOW, resolved `resolvedMinutes` before NOW when given. */
async function quarantined(
  exec: Exec,
  resource: string,
  recordId: string,
  reason: string,
  minutes: number,
  resolvedMinutes?: number,
): Promise<void> {
  await exec(
    `INSERT INTO quarantine (resource, record_id, run_id, reason, raw, at, resolved_at) VALUES (?, ?, 1, ?, '{}', ?, ?)`,
    [resource, recordId, reason, ago(minutes), resolvedMinutes === undefined ? null : ago(resolvedMinutes)],
  );
}

const TYPE_REASON = (field: string) =>
  `schema: ${field} is string, the mirror's column takes number (sync.schema.on_type_change = "quarantine")`;

/** Every resource synced two minutes ago: only the drift can raise a problem. */
async function allSynced(exec: Exec): Promise<void> {
  for (const r of ['projects', 'issuances', 'units', 'custody']) await syncRun(exec, r, 'succeeded', 2);
}

const only = (health: Health) => {
  const found = health.problems.filter((p) => p.code === 'upstream-schema-changed');
  expect(found).toHaveLength(1);
  return found[0]!;
};

export const DRIFT_CASES: HealthCase[] = [
  {
    name: 'schema drift: a new field within sync.schema.problem_hours is a warning; one seen before it is not',
    seed: async (exec) => {
      await allSynced(exec);
      // A minute inside the 24 h window, and a minute outside it.
      await schemaChange(exec, {
        resource: 'projects',
        field: 'newField',
        kind: 'field-added',
        after: 'string',
        minutes: 24 * 60 - 1,
        count: 7,
      });
      await schemaChange(exec, {
        resource: 'issuances',
        field: 'issuanceVintage',
        kind: 'type-changed',
        before: 'number',
        after: 'string',
        mapped: true,
        minutes: 24 * 60 + 1,
      });
    },
    codes: ['upstream-schema-changed'],
    check: (health) => {
      const p = only(health);
      expect(p.severity).toBe('warning');
      expect(health.status).toBe('warning');
      expect(p.message).toBe(
        "1 change to the operator's records in the last 24h: projects.newField added (string)",
      );
      expect(p.action).toBe(
        'read what changed: vcu-sync schema projects; a new field needs nothing: it is kept in _raw',
      );
      const { schema } = health.snapshot;
      expect(schema.since).toBe(ago(24 * 60));
      expect(schema.recent.map((c) => [c.resource, c.field, c.kind, c.mapped, c.count])).toEqual([
        ['projects', 'newField', 'field-added', false, 7],
      ]);
      expect([schema.recentCount, schema.recentMapped]).toEqual([1, 0]);
      // The gauge counts every change ever recorded, the old one too.
      expect(schema.recorded).toEqual([
        { resource: 'issuances', kind: 'type-changed', changes: 1 },
        { resource: 'projects', kind: 'field-added', changes: 1 },
      ]);
      expect(schema.quarantined).toEqual([]);
    },
  },
  {
    name: 'schema drift: a mapped field changed type and its records are quarantined: critical, apart from unreadable records',
    seed: async (exec) => {
      await allSynced(exec);
      await schemaChange(exec, {
        resource: 'unit_operations',
        field: 'unitsQuantity',
        kind: 'type-changed',
        before: 'number',
        after: 'string',
        mapped: true,
        minutes: 90,
        count: 2,
      });
      await schemaChange(exec, {
        resource: 'projects',
        field: 'projectStatus',
        kind: 'new-value',
        after: 'Suspended',
        mapped: true,
        minutes: 10,
      });
      await quarantined(exec, 'unit_operations', 'u-1', TYPE_REASON('unitsQuantity'), 90);
      await quarantined(exec, 'unit_operations', 'u-2', TYPE_REASON('unitsQuantity'), 80);
      // Came back on a later run: no longer counted.
      await quarantined(exec, 'projects', 'p-1', TYPE_REASON('totalEstimatedUnits'), 300, 200);
      // Not JSON at all: records-quarantined's, not the drift's.
      await quarantined(exec, 'projects', 'p-2', 'not JSON', 5);
    },
    codes: ['upstream-schema-changed', 'records-quarantined'],
    check: (health) => {
      const p = only(health);
      expect(p.severity).toBe('critical');
      expect(health.problems[0]?.code).toBe('upstream-schema-changed');
      expect(p.message).toBe(
        `2 changes to the operator's records in the last 24h: projects.projectStatus new value "Suspended" (mapped), unit_operations.unitsQuantity number -> string (mapped); 2 records quarantined for their shape, missing from the mirror: unit_operations 2 (${TYPE_REASON('unitsQuantity')})`,
      );
      expect(p.action).toContain(
        'read what changed: vcu-sync schema projects, vcu-sync schema unit_operations',
      );
      expect(p.action).toContain(
        'set on_type_change = "store" (on_new_value = "store" for a new value) in [sync.schema] and restart',
      );
      expect(p.action).toContain('a new state value: tell the apps that read that column');
      expect(p.action).not.toContain('_raw');
      const unreadable = health.problems.find((x) => x.code === 'records-quarantined');
      expect(unreadable?.message).toBe('records the operator sent that could not be read: projects 1');
      expect(health.snapshot.quarantine).toEqual({ projects: 1 });
      expect(health.snapshot.schema.quarantined).toEqual([
        { resource: 'unit_operations', records: 2, reason: TYPE_REASON('unitsQuantity') },
      ]);
      expect(health.snapshot.schema.recentMapped).toBe(2);
    },
  },
  {
    name: 'schema drift: a mapped field stored under on_type_change = "store" and a field gone: critical, nothing quarantined',
    seed: async (exec) => {
      await allSynced(exec);
      await schemaChange(exec, {
        resource: 'issuances',
        field: 'issuanceVintage',
        kind: 'type-changed',
        before: 'number',
        after: 'string',
        mapped: true,
        minutes: 30,
      });
      await schemaChange(exec, {
        resource: 'custody_projects',
        field: 'projectTags',
        kind: 'field-removed',
        before: 'string',
        after: 'absent',
        mapped: true,
        minutes: 20,
      });
    },
    codes: ['upstream-schema-changed'],
    check: (health) => {
      const p = only(health);
      expect(p.severity).toBe('critical');
      expect(p.message).toBe(
        "2 changes to the operator's records in the last 24h: custody_projects.projectTags removed (mapped), issuances.issuanceVintage number -> string (mapped)",
      );
      expect(p.action).toBe(
        'read what changed: vcu-sync schema custody_projects, vcu-sync schema issuances; a mapped field changed type and its records were stored: the column is null, the value in _raw; a field gone or a new key format: tell the apps that read it',
      );
    },
  },
  {
    name: 'schema drift: records still quarantined after the window stay critical',
    seed: async (exec) => {
      await allSynced(exec);
      await schemaChange(exec, {
        resource: 'projects',
        field: 'totalEstimatedUnits',
        kind: 'type-changed',
        before: 'number',
        after: 'string',
        mapped: true,
        minutes: 3 * 24 * 60,
      });
      await quarantined(exec, 'projects', 'p-9', TYPE_REASON('totalEstimatedUnits'), 3 * 24 * 60);
    },
    codes: ['upstream-schema-changed'],
    check: (health) => {
      const p = only(health);
      expect(p.severity).toBe('critical');
      expect(p.message).toBe(
        `1 record quarantined for their shape, missing from the mirror: projects 1 (${TYPE_REASON('totalEstimatedUnits')})`,
      );
      expect(p.action).toMatch(/^read what changed: vcu-sync schema projects; records are quarantined/);
      expect(health.snapshot.schema.recent).toEqual([]);
    },
  },
  {
    name: 'schema drift: many changes at once are listed up to a bound and counted whole',
    seed: async (exec) => {
      await allSynced(exec);
      for (let i = 0; i < 25; i++) {
        await schemaChange(exec, {
          resource: 'custody_units',
          field: `extra${String(i).padStart(2, '0')}`,
          kind: 'field-added',
          after: 'x'.repeat(500),
          minutes: 60 - i,
        });
      }
    },
    codes: ['upstream-schema-changed'],
    check: (health) => {
      const p = only(health);
      expect(p.severity).toBe('warning');
      const { schema } = health.snapshot;
      expect(schema.recentCount).toBe(25);
      // Newest first, 20 of them, each value clipped.
      expect(schema.recent).toHaveLength(20);
      expect(schema.recent[0]?.field).toBe('extra24');
      expect(schema.recent.every((c) => c.after.length <= 200)).toBe(true);
      expect(p.message).toMatch(
        /^25 changes to the operator's records in the last 24h: custody_units\.extra24 added/,
      );
      expect(p.message).toMatch(/, and 20 more$/);
      expect(p.message.length).toBeLessThan(1_500);
    },
  },
];

const HOUR = 3_600_000;

/**
 * The same on a real drift: two syncs against the simulator on the store under test, records
 * changed between them; then what every surface shows (the problem, the gauges, `vcu-sync status`,
 * the status page), and a day later. (A third run would re-apply the quarantined record:
 * test/shape/reapplyVanished.test.ts shows why that is left out here for now.)
 */
export function driftAgainstSimulator(open: () => Promise<HealthStore>): void {
  it('a drift between two syncs against the simulator: every surface names the table, the fields and the command', async () => {
    const store = await open();
    const h = await harness({ projects: 30 }, { 'sync.page_size': 10 });
    try {
      const sync = async () => {
        const outcome = await runSync(h.ctx, 'projects', { backend: store.backend, sleep: noSleep });
        expect(outcome.status, outcome.error ?? '').toBe('succeeded');
      };
      const health = (at = h.ctx.clock.now()) => readHealth(store.reads, h.ctx.config, at);
      const drift = (found: Health) => found.problems.find((p) => p.code === 'upstream-schema-changed');

      // The first complete scan is the baseline: nothing to report.
      await sync();
      expect(drift(await health())).toBeUndefined();
      const ids = [...h.sim.registry.snapshot('projects').keys()];
      h.sim.registry.change('projects', ids[0]!, { newField: 'x' });
      h.sim.registry.change('projects', ids[2]!, { totalEstimatedUnits: '12' });
      await sync();

      const now = h.ctx.clock.now();
      const after = await health(now);
      const p = drift(after);
      expect(p?.severity).toBe('critical');
      expect(after.status).toBe('critical');
      expect(p?.message).toMatch(/^2 changes to the operator's records in the last 24h: /);
      expect(p?.message).toContain('projects.totalEstimatedUnits number -> string (mapped)');
      expect(p?.message).toContain('projects.newField added (string)');
      expect(p?.message).toContain(
        '1 record quarantined for their shape, missing from the mirror: projects 1 (schema: totalEstimatedUnits',
      );
      expect(p?.action).toMatch(/^read what changed: vcu-sync schema projects; records are quarantined/);
      // Only the drift: the shape-quarantined record is not "unreadable".
      expect(after.problems.map((x) => x.code)).not.toContain('records-quarantined');

      // The gauges, the command line and the page say the same.
      const metrics = createMetrics();
      updateGauges(metrics, after, now);
      const text = await metrics.registry.metrics();
      expect(text).toMatch(/^vcu_sync_schema_changes\{resource="projects",kind="field-added"\} 1$/m);
      expect(text).toMatch(/^vcu_sync_schema_changes\{resource="projects",kind="type-changed"\} 1$/m);
      expect(text).toMatch(/^vcu_sync_schema_quarantined\{resource="projects"\} 1$/m);
      expect(text).toMatch(/^vcu_sync_schema_quarantined\{resource="unit_operations"\} 0$/m);
      expect(text).toMatch(/^vcu_sync_problem\{code="upstream-schema-changed",severity="critical"\} 1$/m);
      const cli = formatHealth(after, now);
      expect(cli).toContain('[critical] upstream-schema-changed: 2 changes');
      expect(cli).toContain(
        'upstream schema (24h): 2 changes (1 to mapped fields); quarantined for their shape: projects 1',
      );
      const page = renderStatusPage(after, { syncDurations: [], queueDepth: [], recentWebhooks: [] }, now);
      expect(page).toContain('<h2>Upstream schema</h2>');
      expect(page).toContain(
        "2 changes to the operator's records in the last 24 h; 1 record quarantined for their shape (projects 1)",
      );
      expect(page).toMatch(
        /<td data-label="field">totalEstimatedUnits<\/td><td data-label="change">number -&gt; string \(mapped\)<\/td>/,
      );

      // A day later the changes are out of the window, but the record is still quarantined.
      const later = drift(await health(now + 25 * HOUR));
      expect(later?.severity).toBe('critical');
      expect(later?.message).toMatch(
        /^1 record quarantined for their shape, missing from the mirror: projects 1 /,
      );
    } finally {
      await h.close();
      await store.close();
    }
  });
}
