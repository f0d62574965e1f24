import type { ScenarioResult } from './result.js';

/** A figure with 3 significant digits, thousands grouped; "-" for none. */
export function figure(value: number | null): string {
  if (value === null || !Number.isFinite(value)) return '-';
  const abs = Math.abs(value);
  if (abs >= 1000) return Math.round(value).toLocaleString('en-US');
  if (abs >= 100) return value.toFixed(0);
  if (abs >= 10) return value.toFixed(1);
  if (abs >= 1) return value.toFixed(2);
  return value.toPrecision(3);
}

/** The results as one Markdown table: scenario, measure, vcu-sync, baseline, ratio, target, met. */
export function formatTable(results: readonly ScenarioResult[]): string {
  const head = ['scenario', 'measure', 'vcu-sync', 'baseline', 'ratio', 'target', 'met'];
  const rows = results.map((r) => [
    r.scenario,
    r.measure,
    figure(r.value),
    figure(r.baseline),
    r.ratio === null ? '-' : `${r.ratio.toFixed(2)}x`,
    r.target,
    r.met ? 'yes' : 'NO',
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`;
  return [line(head), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...rows.map(line)].join('\n');
}
