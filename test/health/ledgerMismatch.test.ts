import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { healthSchema } from '../../src/health/health.js';
import { runSync } from '../../src/mirror/syncRun.js';
import { runPass } from '../../src/reconcile/pass.js';
import { commitQueueFor } from '../../src/sqlite/commitQueue.js';
import { sqliteBackend } from '../../src/sqlite/mirror.js';
import { cliArgs, runNode } from '../helpers/cli.js';
import { sqliteApiComponent } from '../helpers/sqliteApi.js';
import { type Harness, harness, noSleep } from '../mirror/harness.js';

/**
 * `ledger-mismatch` where on-call looks, over the real listener and the real command: issuances
 * synced from the simulator, then an issuance tokenized twice over (two approved Tokenizations of its
 * whole amount), a reconciliation pass, and `GET /status` (its zod declaration holds), `GET /metrics`
 * (the findings gauges, promtool-clean), the status page and `vcu-sync status` in another process
 * on the same file.
 */

const TOKEN = 'ledger-mismatch-token-0123456789';
let h: Harness;
let api: ReturnType<typeof sqliteApiComponent>;
let base: string;
let issuance: { id: string; tonnes: number };
/** When the pass ran (ms). */
let passAt: number;

/** An approved Tokenization of `tonnes` on `issuanceId`, reported a minute ago. */
function approvedTokenization(ref: string, issuanceId: string, tonnes: number): void {
  const at = new Date(h.ctx.clock.now() - 60_000).toISOString();
  const body = JSON.stringify({
    marketplaceTransactionRef: ref,
    operationType: 'Tokenization',
    issuanceId,
    transactionAmount: tonnes,
    transactionUnit: 'tCO2e',
  });
  h.ctx.database.sqlite
    .prepare(
      `INSERT INTO outbox ("marketplaceTransactionRef", "operationType", order_key, body, body_hash, state, attempts,
         next_attempt_at, created_at, updated_at, accepted_at, decided_at, finished_at)
       VALUES (?, 'Tokenization', ?, ?, ?, 'approved', 1, ?, ?, ?, ?, ?, ?)`,
    )
    .run(ref, `key-${ref}`, body, `hash-${ref}`, at, at, at, at, at, at);
}

beforeAll(async () => {
  h = await harness(
    { issuances: 10 },
    { 'sync.page_size': 10, 'api.listen': '127.0.0.1:0', 'api.token': TOKEN },
  );
  const outcome = await runSync(h.ctx, 'issuances', {
    backend: sqliteBackend(h.ctx.database.sqlite),
    sleep: noSleep,
  });
  if (outcome.status !== 'succeeded') throw new Error(`sync: ${outcome.error}`);
  const row = h.ctx.database.sqlite
    .prepare(
      `SELECT "issuanceId" AS id, "issuanceAmount" AS amount FROM issuances ORDER BY "issuanceId" LIMIT 1`,
    )
    .get() as { id: string | number; amount: number };
  issuance = { id: String(row.id), tonnes: row.amount };
  // The same tokens reported twice: twice the issuance's amount tokenized.
  approvedTokenization('tok-1', issuance.id, issuance.tonnes);
  approvedTokenization('tok-2', issuance.id, issuance.tonnes);
  passAt = h.ctx.clock.now();
  await runPass(
    {
      store: commitQueueFor(h.ctx.database.sqlite),
      settings: {
        reconcile: h.ctx.config.reconcile,
        decisionWarnHours: h.ctx.config.status.decision_warn_hours,
      },
      now: () => passAt,
    },
    null,
  );
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

describe('ledger-mismatch over HTTP and the command line', () => {
  it('GET /status: critical (503), the problem naming the issuance, the facts as declared', async () => {
    const res = await get('/status');
    expect(res.status).toBe(503);
    const health = healthSchema.parse(await res.json());
    const problem = health.problems.find((p) => p.code === 'ledger-mismatch');
    expect(problem?.severity).toBe('critical');
    expect(problem?.message).toContain('over-issuance 1');
    expect(problem?.message).toContain(
      `(e.g. over-issuance on issuance ${issuance.id}: issuance ${issuance.id}: ${issuance.tonnes * 2} t tokenized, beyond its amount of ${issuance.tonnes} t)`,
    );
    expect(problem?.action).toContain('over-issuance: more tokenized than the issuance holds');
    const over = health.snapshot.reconciliation.recent.find((f) => f.kind === 'over-issuance');
    expect(over).toMatchObject({
      severity: 'critical',
      subject: 'issuance',
      subjectId: issuance.id,
      expectedKg: issuance.tonnes * 1000,
      foundKg: issuance.tonnes * 2000,
    });
    expect(health.snapshot.reconciliation.lastRecordedAt).toBe(new Date(passAt).toISOString());
  });

  it('GET /metrics: the findings gauges and the problem, promtool-clean', async () => {
    const res = await get('/metrics');
    expect(res.status).toBe(200);
    const body = await res.text();
    expect(body).toMatch(/^vcu_sync_reconciliation_findings\{kind="over-issuance",severity="critical"\} 1$/m);
    expect(body).toMatch(
      /^vcu_sync_reconciliation_findings\{kind="outstanding-negative",severity="critical"\} 0$/m,
    );
    expect(body).toMatch(
      /^vcu_sync_reconciliation_findings\{kind="retirement-missing",severity="warning"\} 0$/m,
    );
    expect(body).toMatch(/^vcu_sync_problem\{code="ledger-mismatch",severity="critical"\} 1$/m);
    const check = await promtoolCheck(body);
    expect(check.output).toBe('');
    expect(check.code).toBe(0);
  });

  it('GET /: the "Reconciliation" section lists the finding', async () => {
    const res = await get('/');
    expect(res.status).toBe(200);
    const page = await res.text();
    const section = page.slice(page.indexOf('<h2>Reconciliation</h2>'), page.indexOf('<div class="charts">'));
    expect(section).toMatch(
      /<p id="reconciliation-summary">\d+ open findings?: 1 critical \(over-issuance 1\)/,
    );
    expect(section).toContain(`<td data-label="subject">issuance ${issuance.id}</td>`);
  });

  it('vcu-sync status in another process: exit 2, the problem and the reconciliation line', () => {
    const out = runNode(cliArgs(['status']), { VCU_SYNC_DB: h.ctx.config.database.path });
    expect(out.stderr).toBe('');
    expect(out.code).toBe(2);
    expect(out.stdout).toMatch(
      /\[critical\] ledger-mismatch: \d+ open reconciliation findings?: over-issuance 1/,
    );
    expect(out.stdout).toContain('→ read the findings with their figures: vcu-sync reconcile');
    expect(out.stdout).toMatch(/\nreconciliation: open findings critical 1 \(over-issuance 1\)/);
  });
});
