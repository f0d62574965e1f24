import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { renderStatusPage } from '../../src/api/statusPage.js';
import { loadConfig } from '../../src/config/config.js';
import { formatHealth } from '../../src/health/format.js';
import { healthSchema } from '../../src/health/health.js';
import { judgeHealth } from '../../src/health/readHealth.js';
import { NO_FAULTS, unreadableSnapshot } from '../../src/health/snapshot.js';
import { runSync } from '../../src/mirror/syncRun.js';
import { sqliteBackend } from '../../src/sqlite/mirror.js';
import { cliArgs, runNode } from '../helpers/cli.js';
import { sqliteApiComponent } from '../helpers/sqliteApi.js';
import { type Harness, harness, noSleep } from '../mirror/harness.js';

/**
 * `upstream-schema-changed` where on-call looks, over the real listener and the real command: a
 * drift between two syncs against the simulator, then `GET /status` (its zod declaration holds),
 * `GET /metrics` (the schema gauges, promtool-clean), the status page, and `vcu-sync status` in
 * another process on the same file.
 */

const TOKEN = 'schema-drift-token-0123456789';
let h: Harness;
let api: ReturnType<typeof sqliteApiComponent>;
let base: string;

beforeAll(async () => {
  h = await harness(
    { projects: 30, issuances: 10, units: 20 },
    { 'sync.page_size': 10, 'api.listen': '127.0.0.1:0', 'api.token': TOKEN },
  );
  const sync = async () => {
    const outcome = await runSync(h.ctx, 'projects', {
      backend: sqliteBackend(h.ctx.database.sqlite),
      sleep: noSleep,
    });
    if (outcome.status !== 'succeeded') throw new Error(`sync: ${outcome.error}`);
  };
  await sync();
  const ids = [...h.sim.registry.snapshot('projects').keys()];
  h.sim.registry.change('projects', ids[1]!, { projectStatus: 'Suspended' });
  h.sim.registry.change('projects', ids[2]!, { totalEstimatedUnits: '12' });
  await sync();
  api = sqliteApiComponent(h.ctx);
  await api.start();
  base = `http://127.0.0.1:${api.address()!.port}`;
});
afterAll(async () => {
  await api?.stop();
  await h?.close();
});

const get = (path: string) => fetch(`${base}${path}`, { headers: { authorization: `Bearer ${TOKEN}` } });

/** `promtool check metrics` over `text`: its exit code and what it said. */
function promtoolCheck(text: string): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('promtool', ['check', 'metrics'], { stdio: ['pipe', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d: Buffer) => {
      output += String(d);
    });
    child.stderr.on('data', (d: Buffer) => {
      output += String(d);
    });
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, output }));
    child.stdin.end(text);
  });
}

describe('upstream-schema-changed over HTTP and the command line', () => {
  it('GET /status: critical (503), the problem first, the schema facts as declared', async () => {
    const res = await get('/status');
    expect(res.status).toBe(503);
    const health = healthSchema.parse(await res.json());
    const [first] = health.problems;
    expect(first?.code).toBe('upstream-schema-changed');
    expect(first?.severity).toBe('critical');
    expect(first?.message).toContain('projects.projectStatus new value "Suspended" (mapped)');
    expect(first?.message).toContain('projects.totalEstimatedUnits number -> string (mapped)');
    expect(first?.action).toContain('vcu-sync schema projects');
    expect(health.snapshot.schema.recent.map((c) => [c.field, c.kind]).sort()).toEqual([
      ['projectStatus', 'new-value'],
      ['totalEstimatedUnits', 'type-changed'],
    ]);
    expect(health.snapshot.schema.quarantined).toEqual([
      { resource: 'projects', records: 1, reason: expect.stringMatching(/^schema: totalEstimatedUnits /) },
    ]);
  });

  it('GET /metrics: the schema gauges and the problem, promtool-clean', async () => {
    const res = await get('/metrics');
    expect(res.status).toBe(200);
    const body = await res.text();
    expect(body).toMatch(/^vcu_sync_schema_changes\{resource="projects",kind="new-value"\} 1$/m);
    expect(body).toMatch(/^vcu_sync_schema_changes\{resource="projects",kind="type-changed"\} 1$/m);
    expect(body).toMatch(/^vcu_sync_schema_quarantined\{resource="projects"\} 1$/m);
    expect(body).toMatch(/^vcu_sync_schema_quarantined\{resource="custody_units"\} 0$/m);
    expect(body).toMatch(/^vcu_sync_problem\{code="upstream-schema-changed",severity="critical"\} 1$/m);
    const check = await promtoolCheck(body);
    expect(check.output).toBe('');
    expect(check.code).toBe(0);
  });

  it('GET /: the problem first and the "Upstream schema" section listing the changes', async () => {
    const res = await get('/');
    expect(res.status).toBe(200);
    const page = await res.text();
    expect(page).toMatch(/<section id="first" class="critical">[\s\S]*upstream-schema-changed/);
    const section = page.slice(
      page.indexOf('<h2>Upstream schema</h2>'),
      page.indexOf('<div class="charts">'),
    );
    expect(section).toContain('2 changes to the operator');
    expect(section).toContain('1 record quarantined for their shape (projects 1)');
    expect(section).toContain('<td data-label="change">new value &quot;Suspended&quot; (mapped)</td>');
    expect((section.match(/<tr><td/g) ?? []).length).toBe(2);
  });

  it('vcu-sync status in another process: exit 2, the problem and the schema line', () => {
    const out = runNode(cliArgs(['status']), { VCU_SYNC_DB: h.ctx.config.database.path });
    expect(out.stderr).toBe('');
    expect(out.code).toBe(2);
    expect(out.stdout).toMatch(/\[critical\] upstream-schema-changed: 2 changes to the operator's records/);
    expect(out.stdout).toContain('→ read what changed: vcu-sync schema projects;');
    expect(out.stdout).toContain(
      'upstream schema (24h): 2 changes (2 to mapped fields); quarantined for their shape: projects 1',
    );
  });
});

describe('an unreadable database', () => {
  it('shows no schema figures it could not read, in the command line or on the page', () => {
    const now = Date.parse('2026-03-02T12:00:00.000Z');
    const config = loadConfig({ env: { VCU_SYNC_DB: '/nonexistent/unused.db' } });
    const snapshot = unreadableSnapshot({ ...NO_FAULTS, readError: 'SQLITE_IOERR: disk I/O error' });
    const health = judgeHealth(snapshot, config, { kind: 'sqlite', location: '/x.db' }, now, null);
    expect(health.problems.map((p) => p.code)).toEqual(['database-unreadable']);
    expect(formatHealth(health, now)).not.toContain('upstream schema');
    const page = renderStatusPage(health, { syncDurations: [], queueDepth: [], recentWebhooks: [] }, now);
    expect(page).not.toContain('Upstream schema');
  });
});
