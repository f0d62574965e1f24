import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SeededApi, seededApi, TOKEN } from './seed.js';

let h: SeededApi;
beforeAll(async () => {
  h = await seededApi();
});
afterAll(async () => {
  await h?.close();
});

/** Pipes `text` into `promtool check metrics`; resolves with its exit code and output. */
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

describe('GET /metrics', () => {
  it('exposes every metric family of src/common/metrics.ts with the activity counted, and passes promtool', async () => {
    const res = await fetch(`${h.base}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(res.status).toBe(200);
    const body = await res.text();
    for (const metric of h.ctx.metrics.registry.getMetricsAsArray()) {
      expect(body, metric.name).toContain(`# TYPE ${metric.name} `);
    }
    expect(h.ctx.metrics.registry.getMetricsAsArray().length).toBeGreaterThanOrEqual(12);
    // The activity is there: syncs succeeded, notifications answered, decisions received.
    expect(body).toMatch(
      /^vcu_sync_sync_runs_total\{[^}]*resource="projects"[^}]*status="succeeded"[^}]*\} 1$/m,
    );
    expect(body).toMatch(/^vcu_sync_notify_requests_total\{code="202"\} [1-9]/m);
    expect(body).toMatch(/^vcu_sync_notify_requests_total\{code="500"\} 1$/m);
    expect(body).toMatch(/^vcu_sync_outbox_rows\{state="approved"\} 2$/m);
    expect(body).toMatch(/^vcu_sync_outbox_rows\{state="queued"\} 1$/m);
    expect(body).toMatch(/^vcu_sync_mirror_records\{resource="projects"\} 15$/m);

    // Which instance this is, how long it has been up, and each problem present now.
    const id = /^vcu_sync_build_info\{([^}]*)\} 1$/m.exec(body);
    expect(id, 'vcu_sync_build_info').not.toBeNull();
    expect(id![1]).toContain(`operator_host="${new URL(h.sim.url).host}"`);
    expect(id![1]).toContain('database_kind="sqlite"');
    expect(id![1]).toMatch(/version="\d+\.\d+\.\d+"/);
    expect(body).toMatch(/^vcu_sync_start_time_seconds \d{10}/m);
    expect(body).toMatch(/^vcu_sync_problem\{code="operations-rejected",severity="warning"\} 1$/m);
    expect(body).toMatch(/^vcu_sync_problem\{code="operations-failed",severity="warning"\} 1$/m);
    expect(body).not.toMatch(/^vcu_sync_problem\{code="sending-paused"/m);
    expect(body).toMatch(/^vcu_sync_status 1$/m);
    expect(body).toMatch(/^vcu_sync_decisions_awaiting 0$/m);

    const check = await promtoolCheck(body);
    expect(check.output).toBe('');
    expect(check.code).toBe(0);
  });

  it('promtool really checks: a malformed exposition fails it', async () => {
    const check = await promtoolCheck('# TYPE broken counter\nbroken{ 1\n');
    expect(check.code).not.toBe(0);
  });
});
