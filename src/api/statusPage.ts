import { formatDuration } from '../health/rules.js';
import type { Series } from '../health/series.js';
import type { Health } from '../status.js';

/**
 * The status page for people: the verdict and the worst problem first, then sync freshness,
 * the outbox, rejections and failures, webhook activity, and two small charts of the last day.
 * Plain server-rendered HTML and inline SVG: it loads with no scripts and refreshes itself.
 */

const esc = (s: unknown) =>
  String(s ?? '').replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!,
  );

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

function chart(
  title: string,
  points: Array<{ x: number; y: number; color?: string }>,
  kind: 'bars' | 'dots',
  yUnit: string,
) {
  const w = 520;
  const h = 120;
  const maxY = Math.max(1, ...points.map((p) => p.y));
  const marks = points
    .map((p) => {
      const x = 30 + p.x * (w - 70);
      const y = h - 20 - (p.y / maxY) * (h - 35);
      return kind === 'bars'
        ? `<rect x="${x.toFixed(1)}" y="${y.toFixed(1)}" width="14" height="${(h - 20 - y).toFixed(1)}" fill="#0969da"><title>${p.y}</title></rect>`
        : `<circle cx="${x.toFixed(1)}" cy="${y.toFixed(1)}" r="3" fill="${p.color ?? '#0969da'}"><title>${p.y.toFixed(1)} ${yUnit}</title></circle>`;
    })
    .join('');
  return `<figure><figcaption>${esc(title)} (max ${esc(Number(maxY.toFixed(1)))} ${esc(yUnit)})</figcaption>
<svg role="img" aria-label="${esc(title)}" width="${w}" height="${h}" viewBox="0 0 ${w} ${h}">
<line x1="28" y1="${h - 20}" x2="${w}" y2="${h - 20}" stroke="#8c959f"/><text x="30" y="${h - 5}" font-size="10">24h ago</text><text x="${w - 30}" y="${h - 5}" font-size="10">now</text>${marks}</svg></figure>`;
}

export function renderStatusPage(health: Health, series: Series, now: number): string {
  const s = health.snapshot;
  const dayStart = now - 24 * 3_600_000;
  const xOf = (iso: string) => Math.min(1, Math.max(0, (Date.parse(iso) - dayStart) / (24 * 3_600_000)));
  const problems = health.problems.length
    ? `<ul class="problems">${health.problems
        .map(
          (p) =>
            `<li class="${p.severity}"><b>${esc(p.severity)}</b> <code>${esc(p.code)}</code> ${esc(p.message)}<br><small>→ ${esc(p.action)}</small></li>`,
        )
        .join('')}</ul>`
    : '<p>No problems.</p>';
  const resources = s.resources
    .map((r) => {
      const age = r.lastSuccessAt ? `${formatDuration(now - Date.parse(r.lastSuccessAt))} ago` : 'never';
      return `<tr><td>${esc(r.resource)}</td><td>${esc(age)}</td><td>${r.records}</td><td>${esc(r.lastRun?.status ?? '-')}</td><td>${esc(r.lastRun?.error ?? '')}</td></tr>`;
    })
    .join('');
  const states = ['queued', 'sending', 'accepted', 'approved', 'rejected', 'failed', 'cancelled']
    .map((st) => `<td class="n">${s.outbox.byState[st] ?? 0}</td>`)
    .join('');
  const rejections = s.rejections.recent
    .map(
      (r) =>
        `<tr><td>${when(r.at, now)}</td><td>${esc(r.ref)}</td><td>${esc(r.operationType)}</td><td>${esc(r.reason)}</td></tr>`,
    )
    .join('');
  const failures = s.outbox.recentFailures
    .map(
      (r) =>
        `<tr><td>${when(r.at, now)}</td><td>${esc(r.ref)}</td><td>${esc(r.operationType)}</td><td>${esc(r.error)}</td></tr>`,
    )
    .join('');
  const webhooks = series.recentWebhooks
    .map(
      (w) =>
        `<tr><td>${when(w.at, now)}</td><td>${esc(w.type)}</td><td>${esc(w.ref)}</td><td>${esc(w.outcome)}</td></tr>`,
    )
    .join('');
  const durations = chart(
    'Sync run durations, last 24h',
    series.syncDurations.map((d) => ({ x: xOf(d.at), y: d.seconds, color: RESOURCE_COLORS[d.resource] })),
    'dots',
    's',
  );
  const depth = chart(
    'Unsent operations (queued + sending), hourly',
    series.queueDepth.map((d) => ({ x: xOf(d.at) * 0.97, y: d.depth })),
    'bars',
    'rows',
  );
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta http-equiv="refresh" content="30">
<title>vcu-sync ${esc(health.status.toUpperCase())}</title><style>
body{font:14px system-ui,sans-serif;margin:1.5rem;color:#1f2328;max-width:1100px}
h1{font-size:1.4rem}.verdict{color:#fff;padding:.1rem .6rem;border-radius:4px;background:${COLORS[health.status]}}
table{border-collapse:collapse;margin:.5rem 0 1.2rem}td,th{border-bottom:1px solid #d0d7de;padding:.25rem .6rem;text-align:left}
td.n,#outbox th{text-align:right}.problems li{margin:.3rem 0}.critical b{color:${COLORS.critical}}.warning b{color:${COLORS.warning}}
.charts{display:flex;flex-wrap:wrap;gap:1.5rem}figure{margin:0}figcaption{font-weight:600;margin-bottom:.3rem}
</style></head><body>
<h1>vcu-sync <span class="verdict" id="verdict">${esc(health.status.toUpperCase())}</span></h1>
<p><small>generated ${esc(health.generatedAt)}; refreshes every 30 s; JSON at <a href="/status">/status</a></small></p>
<h2>Problems</h2>${problems}
<h2>Sync freshness</h2><table id="sync"><tr><th>resource</th><th>last success</th><th>records</th><th>last run</th><th>error</th></tr>${resources}</table>
<h2>Outbox</h2><table id="outbox"><tr><th>queued</th><th>sending</th><th>accepted</th><th>approved</th><th>rejected</th><th>failed</th><th>cancelled</th></tr><tr>${states}</tr></table>
${s.outbox.paused ? `<p class="critical"><b>Sending paused</b> since ${esc(s.outbox.paused.since)}: ${esc(s.outbox.paused.reason)}</p>` : ''}
<div class="charts">${durations}${depth}</div>
<h2>Recent rejections</h2>${rejections ? `<table id="rejections"><tr><th>decided</th><th>ref</th><th>type</th><th>reason</th></tr>${rejections}</table>` : '<p>None.</p>'}
<h2>Recent failures</h2>${failures ? `<table id="failures"><tr><th>at</th><th>ref</th><th>type</th><th>error</th></tr>${failures}</table>` : '<p>None.</p>'}
<h2>Webhooks</h2><p>${s.webhooks.received} received and ${s.webhooks.verificationFailures} refused in the last 24h; last ${s.webhooks.lastReceivedAt ? when(s.webhooks.lastReceivedAt, now) : 'never'}.</p>
${webhooks ? `<table id="webhooks"><tr><th>received</th><th>type</th><th>ref</th><th>outcome</th></tr>${webhooks}</table>` : ''}
</body></html>`;
}
