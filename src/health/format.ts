import type { Health } from './health.js';
import { identityLine } from './identity.js';
import { formatDuration } from './rules.js';
import { windowHours } from './schemaRules.js';

/** `vcu-sync status` for people: the verdict, the worst problem first with what to do, then a short table. */
export function formatHealth(health: Health, now: number): string {
  const lines: string[] = [];
  const verdict = health.status.toUpperCase();
  lines.push(
    `vcu-sync ${verdict}${health.problems.length ? `: ${health.problems.length} problem${health.problems.length === 1 ? '' : 's'}` : ''}`,
  );
  lines.push(identityLine(health.identity, formatDuration, health.snapshot.replicas));
  for (const p of health.problems) {
    lines.push(`  [${p.severity}] ${p.code}: ${p.message}`);
    lines.push(`      → ${p.action}`);
  }
  lines.push('');
  lines.push('resource    last success   records   last run');
  for (const r of health.snapshot.resources) {
    const age = r.lastSuccessAt ? `${formatDuration(now - Date.parse(r.lastSuccessAt))} ago` : 'never';
    const run = r.lastRun ? `${r.lastRun.status} (#${r.lastRun.id})` : '-';
    lines.push(`${r.resource.padEnd(12)}${age.padEnd(15)}${String(r.records).padEnd(10)}${run}`);
  }
  const states = Object.entries(health.snapshot.outbox.byState)
    .map(([state, n]) => `${state} ${n}`)
    .join(', ');
  lines.push('');
  lines.push(`outbox: ${states || 'empty'}${health.snapshot.outbox.paused ? ' (sending PAUSED)' : ''}`);
  const { oldestAcceptedAt, finishedSince } = health.snapshot.outbox;
  lines.push(
    `decisions: ${health.snapshot.outbox.byState.accepted ?? 0} awaiting${oldestAcceptedAt ? ` (oldest ${formatDuration(now - Date.parse(oldestAcceptedAt))})` : ''}; last 24h ${finishedSince.approved ?? 0} approved, ${finishedSince.rejected ?? 0} rejected, ${finishedSince.failed ?? 0} failed`,
  );
  lines.push(
    `webhooks (24h): ${health.snapshot.webhooks.received} received, ${health.snapshot.webhooks.verificationFailures} refused`,
  );
  if (readable(health)) lines.push(schemaLine(health, now), reconciliationLine(health, now));
  lines.push(...replicaLines(health, now));
  return `${lines.join('\n')}\n`;
}

/** Whether the figures were read (an unreadable database has none to show). */
export const readable = (health: Health) =>
  !health.snapshot.database.readError && !health.snapshot.database.unreachable;

/** The operator's records' shape: changes in the problem window, records quarantined for it. */
function schemaLine(health: Health, now: number): string {
  const { schema } = health.snapshot;
  const hours = windowHours(schema, now);
  const quarantined = schema.quarantined.map((q) => `${q.resource} ${q.records}`).join(', ');
  return `upstream schema (${hours}h): ${schema.recentCount} change${schema.recentCount === 1 ? '' : 's'} (${schema.recentMapped} to mapped fields); quarantined for their shape: ${quarantined || 'none'}`;
}

/** Open findings by severity, each severity's kinds, and when a pass last recorded one. */
function reconciliationLine(health: Health, now: number): string {
  const { reconciliation } = health.snapshot;
  const summary = severityCounts(reconciliation.open)
    .map(({ severity, findings, kinds }) => `${severity} ${findings} (${kinds.join(', ')})`)
    .join('; ');
  const last = reconciliation.lastRecordedAt;
  return `reconciliation: ${summary ? `open findings ${summary}` : 'no open findings'}; last recorded ${last ? `${formatDuration(Math.max(0, now - Date.parse(last)))} ago` : 'never'}`;
}

/** The open findings per severity, critical first, with the kinds of each. */
export function severityCounts(open: Health['snapshot']['reconciliation']['open']) {
  const out: Array<{ severity: string; findings: number; kinds: string[] }> = [];
  for (const o of open) {
    const last = out.at(-1);
    if (last?.severity === o.severity) {
      last.findings += o.findings;
      last.kinds.push(`${o.kind} ${o.findings}`);
    } else out.push({ severity: o.severity, findings: o.findings, kinds: [`${o.kind} ${o.findings}`] });
  }
  return out;
}

/** PostgreSQL: one line per replica and per running sync run (nothing on SQLite). */
function replicaLines(health: Health, now: number): string[] {
  const { replicas, runningSyncs } = health.snapshot;
  if (!replicas) return [];
  const lines = ['', `replicas: ${replicas.length === 0 ? 'none registered' : replicas.length}`];
  for (const r of replicas) {
    const beat = formatDuration(Math.max(0, now - Date.parse(r.lastHeartbeatAt)));
    lines.push(
      `  ${r.name} (${r.owner}) ${r.alive ? 'alive' : 'DEAD'}, heartbeat ${beat} ago, runs ${r.runs || '-'}, ${r.claimed} claimed${r.claimedDeliveries > 0 ? `, ${r.claimedDeliveries} deliveries claimed` : ''}, started ${formatDuration(Math.max(0, now - Date.parse(r.startedAt)))} ago`,
    );
  }
  for (const run of runningSyncs ?? []) {
    lines.push(
      `  sync ${run.resource} #${run.id} running since ${run.startedAt}${run.lockHeld ? '' : ' (run lock FREE: its replica is gone)'}`,
    );
  }
  return lines;
}
