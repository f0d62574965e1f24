import { readable, severityCounts } from '../health/format.js';
import { identityLine } from '../health/identity.js';
import type { Health } from '../health/readHealth.js';
import { formatDuration, type Problem } from '../health/rules.js';
import { changeWords, windowHours } from '../health/schemaRules.js';
import type { Series } from '../health/series.js';
import { escapeHtml as esc } from './html.js';
import { renderChart } from './svgChart.js';

/**
 * The status page, for an engineer woken at 3 a.m.: the verdict and the worst problem's first step
 * in the largest type, then which instance this is, the decisions pipeline at a glance, the other
 * problems (each linked to its runbook entry), sync freshness, two charts with axes and legends,
 * and the recent rejections, failures and webhooks. Server-rendered HTML and inline SVG, no
 * scripts; it refreshes itself and fits a 390 px phone without sideways scrolling.
 */

/** "3m ago", with the exact time on hover. */
const when = (iso: string | null | undefined, now: number) =>
  iso
    ? `<time datetime="${esc(iso)}" title="${esc(iso)}">${esc(formatDuration(Math.max(0, now - Date.parse(iso))))} ago</time>`
    : '-';

const COLORS = { ok: '#1a7f37', warning: '#9a6700', critical: '#cf222e' } as const;
const RESOURCE_COLORS: Record<string, string> = {
  projects: '#0969da',
  issuances: '#8250df',
  units: '#bf3989',
  custody: '#1a7f37',
};

const runbookLink = (p: Problem) =>
  `<a class="runbook" href="/runbook#${esc(p.code)}">runbook: ${esc(p.code)}</a>`;

function firstProblem(health: Health): string {
  const p = health.problems[0];
  if (!p) return '<section id="first" class="ok"><p class="do">Nothing to do: no problems.</p></section>';
  return `<section id="first" class="${p.severity}">
<p class="what"><b>${esc(p.severity)}</b> ${esc(p.message)}</p>
<p class="do" id="first-action">Do first: ${esc(p.action)}</p>
<p>${runbookLink(p)}</p></section>`;
}

function otherProblems(health: Health): string {
  const rest = health.problems.slice(1);
  if (!rest.length) return '';
  return `<h2>Other problems</h2><ul class="problems">${rest
    .map(
      (p) =>
        `<li class="${p.severity}"><b>${esc(p.severity)}</b> ${esc(p.message)}<br>→ ${esc(p.action)} ${runbookLink(p)}</li>`,
    )
    .join('')}</ul>`;
}

function pipeline(health: Health, now: number): string {
  const o = health.snapshot.outbox;
  const oldest = o.oldestAcceptedAt
    ? formatDuration(Math.max(0, now - Date.parse(o.oldestAcceptedAt)))
    : null;
  const stage = (id: string, label: string, n: number, note = '') =>
    `<li id="pipe-${id}"><span class="n">${n}</span><span class="label">${esc(label)}</span>${note ? `<small>${esc(note)}</small>` : ''}</li>`;
  return `<h2>Decisions pipeline</h2><ol class="pipeline" id="pipeline">
${stage('queued', 'queued', o.byState.queued ?? 0)}
${stage('sending', 'sending', o.byState.sending ?? 0)}
${stage('accepted', 'awaiting decision', o.byState.accepted ?? 0, oldest ? `oldest ${oldest}` : '')}
${stage('approved', 'approved, 24 h', o.finishedSince.approved ?? 0)}
${stage('rejected', 'rejected, 24 h', o.finishedSince.rejected ?? 0)}
${stage('failed', 'failed, 24 h', o.finishedSince.failed ?? 0)}
</ol>${o.paused ? `<p class="critical"><b>Sending paused</b> since ${esc(o.paused.since)}: ${esc(o.paused.reason)}</p>` : ''}`;
}

/** Upstream schema: the recent changes to the operator's records' shape, and what is quarantined for it. */
function upstreamSchema(health: Health, now: number): string {
  if (!readable(health)) return '';
  const { schema } = health.snapshot;
  const hours = windowHours(schema, now);
  const quarantined = schema.quarantined.reduce((n, q) => n + q.records, 0);
  const rows = schema.recent.map((c) => [
    when(c.firstSeenAt, now),
    esc(c.resource),
    esc(c.field),
    esc(changeWords(c)),
    String(c.count),
    esc(c.exampleKey ?? ''),
  ]);
  const more = schema.recentCount - rows.length;
  return `<h2>Upstream schema</h2><p id="schema-summary">${schema.recentCount} change${schema.recentCount === 1 ? '' : 's'} to the operator's records in the last ${hours} h${more > 0 ? ` (the newest ${rows.length} below)` : ''}; ${quarantined} record${quarantined === 1 ? '' : 's'} quarantined for their shape${schema.quarantined.length ? ` (${esc(schema.quarantined.map((q) => `${q.resource} ${q.records}`).join(', '))})` : ''}. <code>vcu-sync schema TABLE</code> shows each table's shape.</p>
${rows.length ? table('schema', ['first seen', 'table', 'field', 'change', 'records', 'example key'], rows) : ''}`;
}

/** Reconciliation: the open findings by severity, the worst and newest listed, when a pass last recorded. */
function reconciliation(health: Health, now: number): string {
  if (!readable(health)) return '';
  const r = health.snapshot.reconciliation;
  const bySeverity = severityCounts(r.open);
  const total = bySeverity.reduce((n, s) => n + s.findings, 0);
  // Severity and kind stay whole (a handful of short words); the ids and details wrap.
  const rows = r.recent.map((f) => [
    `<span class="${f.severity} nowrap"><b>${esc(f.severity)}</b></span>`,
    `<span class="nowrap">${esc(f.kind)}</span>`,
    `${esc(f.subject)} ${esc(f.subjectId)}`,
    esc(f.detail),
    when(f.firstSeenAt, now),
  ]);
  const counts = bySeverity.map((s) => `${s.findings} ${s.severity} (${s.kinds.join(', ')})`).join(', ');
  return `<h2>Reconciliation</h2><p id="reconciliation-summary">${total} open finding${total === 1 ? '' : 's'}${counts ? `: ${esc(counts)}` : ''}${total > rows.length ? ` (the worst ${rows.length} below)` : ''}; last recorded ${r.lastRecordedAt ? when(r.lastRecordedAt, now) : 'never'}. <code>vcu-sync reconcile</code> lists them all with the balance sheets.</p>
${rows.length ? table('reconciliation', ['severity', 'kind', 'subject', 'detail', 'first seen'], rows) : ''}`;
}

function table(id: string, heads: string[], rows: string[][]): string {
  if (!rows.length) return '<p>None.</p>';
  return `<table id="${id}"><thead><tr>${heads.map((h) => `<th>${esc(h)}</th>`).join('')}</tr></thead><tbody>${rows
    .map((cells) => `<tr>${cells.map((c, i) => `<td data-label="${esc(heads[i])}">${c}</td>`).join('')}</tr>`)
    .join('')}</tbody></table>`;
}

export function renderStatusPage(health: Health, series: Series, now: number): string {
  const s = health.snapshot;
  const dayStart = now - 24 * 3_600_000;
  const xOf = (iso: string) => Math.min(1, Math.max(0, (Date.parse(iso) - dayStart) / (24 * 3_600_000)));
  const resources = s.resources.map((r) => [
    esc(r.resource),
    r.lastSuccessAt ? when(r.lastSuccessAt, now) : 'never',
    String(r.records),
    esc(r.lastRun?.status ?? '-'),
    esc(r.lastRun?.error ?? ''),
  ]);
  const durations = renderChart({
    id: 'chart-durations',
    title: 'Sync run duration by resource, last 24 h',
    yUnit: 'seconds',
    kind: 'dots',
    series: Object.entries(RESOURCE_COLORS).map(([resource, color]) => ({
      name: resource,
      color,
      points: series.syncDurations
        .filter((d) => d.resource === resource)
        .map((d) => ({ x: xOf(d.at), y: d.seconds })),
    })),
  });
  const depth = renderChart({
    id: 'chart-depth',
    title: 'Unsent operations (queued + sending) at the end of each hour',
    yUnit: 'operations',
    kind: 'bars',
    series: [
      {
        name: 'unsent operations',
        color: '#0969da',
        points: series.queueDepth.map((d) => ({ x: xOf(d.at), y: d.depth })),
      },
    ],
  });
  const rejections = s.rejections.recent.map((r) => [
    when(r.at, now),
    esc(r.ref),
    esc(r.operationType),
    esc(r.reason),
  ]);
  const failures = s.outbox.recentFailures.map((r) => [
    when(r.at, now),
    esc(r.ref),
    esc(r.operationType),
    esc(r.error),
  ]);
  const webhooks = series.recentWebhooks.map((w) => [
    when(w.at, now),
    esc(w.type),
    esc(w.ref),
    esc(w.outcome),
  ]);
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta http-equiv="refresh" content="30">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>vcu-sync ${esc(health.status.toUpperCase())}</title><style>
*{box-sizing:border-box}body{font:15px/1.45 system-ui,sans-serif;margin:0 auto;padding:1rem;color:#1f2328;max-width:1100px}
h1{font-size:1.3rem;margin:.2rem 0}h2{font-size:1.1rem;margin:1.4rem 0 .4rem}
.verdict{color:#fff;padding:.1rem .6rem;border-radius:4px;background:${COLORS[health.status]}}
#identity{color:#57606a;margin:.2rem 0 1rem;overflow-wrap:anywhere}
#first{border-left:6px solid ${COLORS[health.problems[0]?.severity ?? 'ok']};padding:.4rem .9rem;background:#f6f8fa}
#first .what{font-size:1.2rem;margin:.3rem 0;overflow-wrap:anywhere}#first .do{font-size:1.6rem;font-weight:700;line-height:1.25;margin:.4rem 0;overflow-wrap:anywhere}
.critical b{color:${COLORS.critical}}.warning b{color:${COLORS.warning}}.problems li{margin:.5rem 0;overflow-wrap:anywhere}
.runbook,.nowrap{white-space:nowrap}
.pipeline{display:flex;flex-wrap:wrap;gap:.5rem;list-style:none;padding:0;margin:0}
.pipeline li{flex:1 1 6.5rem;border:1px solid #d0d7de;border-radius:6px;padding:.4rem .6rem}
.pipeline .n{display:block;font-size:1.5rem;font-weight:700}.pipeline .label{display:block}.pipeline small{color:#57606a}
table{border-collapse:collapse;width:100%;margin:.3rem 0 1rem}td,th{border-bottom:1px solid #d0d7de;padding:.25rem .5rem;text-align:left;vertical-align:top;overflow-wrap:anywhere}
.charts{display:grid;grid-template-columns:repeat(auto-fit,minmax(min(100%,420px),1fr));gap:1.2rem}
figure{margin:0;min-width:0}figcaption{font-weight:600;margin-bottom:.3rem}svg{width:100%;height:auto;display:block}
.legend{list-style:none;padding:0;margin:.3rem 0;display:flex;flex-wrap:wrap;gap:.3rem 1rem}
.swatch{display:inline-block;width:.8rem;height:.8rem;border-radius:2px;margin-right:.3rem;vertical-align:-.05rem}
@media (max-width:600px){thead{display:none}tr{display:block;border-bottom:1px solid #d0d7de;padding:.3rem 0}
td{display:block;border:0;padding:.05rem 0}td::before{content:attr(data-label) ": ";color:#57606a}}
</style></head><body>
<h1>vcu-sync <span class="verdict" id="verdict">${esc(health.status.toUpperCase())}</span></h1>
<p id="identity">${esc(identityLine(health.identity, formatDuration))}</p>
${firstProblem(health)}
${pipeline(health, now)}
${otherProblems(health)}
<h2>Sync freshness</h2>${table('sync', ['resource', 'last success', 'records', 'last run', 'error'], resources)}
${upstreamSchema(health, now)}
${reconciliation(health, now)}
<div class="charts">${durations}${depth}</div>
<h2>Recent rejections</h2>${table('rejections', ['decided', 'ref', 'type', 'reason'], rejections)}
<h2>Recent failures</h2>${table('failures', ['at', 'ref', 'type', 'error'], failures)}
<h2>Webhooks</h2><p>${s.webhooks.received} received and ${s.webhooks.verificationFailures} refused in the last 24 h; last ${s.webhooks.lastReceivedAt ? when(s.webhooks.lastReceivedAt, now) : 'never'}.</p>
${webhooks.length ? table('webhooks', ['received', 'type', 'ref', 'outcome'], webhooks) : ''}
<p><small>generated ${esc(health.generatedAt)}; refreshes every 30 s; JSON at <a href="/status">/status</a>; <a href="/runbook">runbook</a></small></p>
</body></html>`;
}
