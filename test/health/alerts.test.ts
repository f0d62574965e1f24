import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { alertRules, renderAlertRulesYaml } from '../../src/health/alertRules.js';
import { PROBLEM_CODES, PROBLEM_SEVERITIES } from '../../src/health/rules.js';
import { ROOT } from '../helpers/cli.js';
import { tempDir } from '../helpers/context.js';

const RULES = path.join(ROOT, 'config/vcu-sync.alerts.yml');

function promtool(args: string[], cwd = ROOT) {
  const result = spawnSync('promtool', args, { cwd, encoding: 'utf8' });
  return { status: result.status, output: `${result.stdout}${result.stderr}` };
}

describe('alert rules shipped in config/vcu-sync.alerts.yml', () => {
  it('is what src/health/alertRules.ts generates (run npm run alerts:generate after changing it)', () => {
    expect(readFileSync(RULES, 'utf8')).toBe(renderAlertRulesYaml(alertRules()));
  });

  it('has an alert for every problem code and severity, with its runbook link and first step', () => {
    const rules = alertRules();
    for (const code of PROBLEM_CODES) {
      for (const severity of PROBLEM_SEVERITIES[code]) {
        const rule = rules.find((r) => r.labels.code === code && r.labels.severity === severity);
        expect(rule, `alert for ${code} (${severity})`).toBeDefined();
        expect(rule!.expr).toContain(`code="${code}"`);
        expect(rule!.annotations.runbook_url).toMatch(new RegExp(`/runbook#${code}$`));
        expect(rule!.annotations.action!.length).toBeGreaterThan(10);
      }
    }
    expect(new Set(rules.map((r) => r.alert)).size).toBe(rules.length);
  });

  it('passes promtool check rules', () => {
    const { status, output } = promtool(['check', 'rules', RULES]);
    expect(status, output).toBe(0);
    expect(output).toMatch(/SUCCESS: \d+ rules found/);
  });

  it('passes the hand-written promtool unit tests (escalation, blips that clear, target down, absent series)', () => {
    const { status, output } = promtool(
      ['test', 'rules', 'vcu-sync.alerts.test.yml'],
      path.join(ROOT, 'config'),
    );
    expect(status, output).toBe(0);
  });

  it('fires for each problem after its `for`, and not before (generated promtool tests)', () => {
    const instance = 'mkt-t:8787';
    const minutes = (d: string) => Number(d.replace(/m$/, ''));
    const expand = (s: string) => s.replaceAll('{{ $labels.instance }}', instance);
    const tests = alertRules()
      .filter((r) => r.expr.startsWith('vcu_sync_problem'))
      .map((r) => {
        const labels = { job: 'vcu-sync', instance, code: r.labels.code!, severity: r.labels.severity! };
        const selector = Object.entries(labels)
          .map(([k, v]) => `${k}="${v}"`)
          .join(',');
        const wait = minutes(r.for);
        return {
          interval: '1m',
          input_series: [{ series: `vcu_sync_problem{${selector}}`, values: '1x90' }],
          alert_rule_test: [
            ...(wait > 0 ? [{ eval_time: `${wait - 1}m`, alertname: r.alert, exp_alerts: [] }] : []),
            {
              eval_time: `${wait + 1}m`,
              alertname: r.alert,
              exp_alerts: [
                {
                  exp_labels: labels,
                  exp_annotations: Object.fromEntries(
                    Object.entries(r.annotations).map(([k, v]) => [k, expand(v)]),
                  ),
                },
              ],
            },
          ],
        };
      });
    const { dir, cleanup } = tempDir('vcu-sync-alerts-');
    try {
      const file = path.join(dir, 'generated.test.yml');
      // JSON is YAML: promtool reads it as it is.
      writeFileSync(file, JSON.stringify({ rule_files: [RULES], evaluation_interval: '1m', tests }));
      const { status, output } = promtool(['test', 'rules', file], dir);
      expect(status, output).toBe(0);
      expect(tests.length).toBeGreaterThanOrEqual(PROBLEM_CODES.length);
    } finally {
      cleanup();
    }
  });
});
