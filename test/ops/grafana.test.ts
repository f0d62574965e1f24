import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/cli.js';
import { type SeededApi, seededApi, TOKEN } from './seed.js';

/** The parts of a Grafana dashboard this test reads. */
interface Panel {
  id: number;
  type: string;
  title: string;
  targets?: Array<{ expr?: string }>;
  datasource?: { type?: string; uid?: string };
}
interface Dashboard {
  uid: string;
  title: string;
  panels: Panel[];
  templating: { list: Array<{ name: string; type: string; definition?: string }> };
}

const dashboard = JSON.parse(
  readFileSync(path.join(ROOT, 'config/vcu-sync.grafana.json'), 'utf8'),
) as Dashboard;

/** How a panel names the Prometheus picked in the dashboard's `datasource` variable. */
// biome-ignore lint/suspicious/noTemplateCurlyInString: Grafana's variable syntax, not a JS template
const DATASOURCE_VARIABLE = '${datasource}';

/** Series names a family of each type exposes (a histogram's buckets, sum and count). */
const SERIES_SUFFIXES: Record<string, string[]> = {
  counter: [''],
  gauge: [''],
  histogram: ['_bucket', '_sum', '_count'],
  summary: ['', '_sum', '_count'],
};

/** Every series name the exposition can hold, from its `# TYPE` lines. */
function seriesNames(exposition: string): Set<string> {
  const names = new Set<string>();
  for (const [, family, type] of exposition.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    for (const suffix of SERIES_SUFFIXES[type!] ?? ['']) names.add(`${family}${suffix}`);
  }
  return names;
}

/** The vcu-sync metric names a PromQL expression reads. */
function metricsIn(expr: string): string[] {
  return [...expr.matchAll(/\bvcu_sync_[a-z0-9_]+\b/g)].map((m) => m[0]);
}

let h: SeededApi;
beforeAll(async () => {
  h = await seededApi();
});
afterAll(async () => {
  await h?.close();
});

describe('the Grafana dashboard (config/vcu-sync.grafana.json)', () => {
  it('reads only metrics a live daemon exposes on /metrics, in every panel', async () => {
    const res = await fetch(`${h.base}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(res.status).toBe(200);
    const exposed = seriesNames(await res.text());
    // The exposition is the real one: the families of src/common/metrics.ts are in it.
    expect(exposed).toContain('vcu_sync_status');
    expect(exposed).toContain('vcu_sync_sync_duration_seconds_bucket');

    const panels = dashboard.panels.filter((p) => p.type !== 'row');
    expect(panels.length).toBeGreaterThanOrEqual(10);
    const missing: string[] = [];
    for (const panel of panels) {
      const exprs = (panel.targets ?? []).map((t) => t.expr ?? '');
      expect(exprs.length, `panel "${panel.title}" has a query`).toBeGreaterThan(0);
      for (const expr of exprs) {
        const names = metricsIn(expr);
        expect(names.length, `panel "${panel.title}" reads a vcu-sync metric: ${expr}`).toBeGreaterThan(0);
        for (const name of names) if (!exposed.has(name)) missing.push(`${panel.title}: ${name}`);
      }
      // Every panel on the dashboard's one Prometheus, chosen at import.
      expect(panel.datasource, panel.title).toEqual({ type: 'prometheus', uid: DATASOURCE_VARIABLE });
    }
    for (const variable of dashboard.templating.list) {
      for (const name of metricsIn(variable.definition ?? '')) {
        if (!exposed.has(name)) missing.push(`variable ${variable.name}: ${name}`);
      }
    }
    expect(missing).toEqual([]);
  });

  it('is one importable dashboard: a uid, unique panel ids, a Prometheus picker and a job filter', () => {
    expect(dashboard.uid).toBe('vcu-sync');
    const ids = dashboard.panels.map((p) => p.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(dashboard.templating.list.map((v) => [v.name, v.type])).toEqual([
      ['datasource', 'datasource'],
      ['job', 'query'],
    ]);
    for (const panel of dashboard.panels.filter((p) => p.type !== 'row')) {
      for (const t of panel.targets ?? []) expect(t.expr, panel.title).toContain('job=~"$job"');
    }
  });

  it('the check catches a panel reading a metric the daemon does not expose', async () => {
    const res = await fetch(`${h.base}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
    const exposed = seriesNames(await res.text());
    // A renamed family, and a histogram's suffix on a counter.
    expect(exposed.has(metricsIn('rate(vcu_sync_notify_request_total[5m])')[0]!)).toBe(false);
    expect(exposed.has(metricsIn('vcu_sync_notify_requests_total_bucket')[0]!)).toBe(false);
  });
});
