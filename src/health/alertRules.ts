import { PROBLEM_SEVERITIES, type ProblemCode } from './rules.js';

/**
 * Prometheus alerting rules for every status problem, generated from the same catalog the health
 * rules raise (so a new problem code cannot ship without its alert), plus the two alerts only
 * Prometheus can raise: the target down and our series gone. `config/vcu-sync.alerts.yml` is this
 * module's output (`npm run alerts:generate`; a test fails when it is out of date).
 *
 * Each status problem is exported as `vcu_sync_problem{code, severity} 1` while present; the alert
 * for (code, severity) fires after it has been present for `for`. Critical problems page after a
 * minute; warnings wait long enough that a passing blip does not wake anyone; rejections fire at
 * once, because the marketplace may have to reverse an internal operation.
 */
export interface AlertRule {
  alert: string;
  expr: string;
  for: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
}

/** The Prometheus job label the rules select (default: "vcu-sync"). */
export const DEFAULT_JOB = 'vcu-sync';

const STEPS: Record<ProblemCode, { summary: string; action: string; for?: string }> = {
  'no-database': {
    summary: 'the database file does not exist',
    action: 'check database.path / VCU_SYNC_DB; start the daemon, which creates it',
  },
  'operator-auth': {
    summary: 'a sync was refused by the operator (401/403)',
    action: 'check the api-key credential and operator.auth; ask the operator whether the key was revoked',
  },
  'sync-failed': {
    summary: 'the last sync run of a resource failed',
    action:
      'journalctl -u vcu-sync (event sync.run.finished, status failed); vcu-sync sync RESOURCE retries now',
    for: '30m',
  },
  'sync-never': {
    summary: 'a resource has never been synced',
    action: 'start the daemon or run vcu-sync sync',
    for: '30m',
  },
  'sync-stale': {
    summary: 'a resource has not synced successfully for several schedule periods',
    action: 'check the daemon runs and the operator is reachable; vcu-sync sync RESOURCE',
    for: '15m',
  },
  'sending-paused': {
    summary: 'sending to the operator is paused: /notify refused our credentials',
    action: 'fix the API key; sending resumes by itself once a probe succeeds',
  },
  'operations-failed': {
    summary: 'operations failed permanently and will not be retried',
    action:
      'vcu-sync outbox list --state failed; fix the cause, then vcu-sync outbox retry REF (or cancel REF)',
    for: '0m',
  },
  'queue-old': {
    summary: 'operations are waiting to be sent for too long',
    action:
      'vcu-sync outbox list shows each last error; check the operator is reachable and the daemon running',
    for: '5m',
  },
  'decision-overdue': {
    summary: 'accepted operations are waiting too long, or too many, for the operator decision',
    action:
      'check webhook delivery (listener reachable, secret right); ask the operator about the oldest refs',
    for: '15m',
  },
  'operations-rejected': {
    summary: 'the operator rejected operations',
    action: 'vcu-sync outbox show REF for each; reverse the internal operation if needed',
    for: '0m',
  },
  'decision-conflict': {
    summary: 'a webhook contradicted an earlier decision',
    action: 'ask the operator which decision stands; webhook_events WHERE outcome = conflict shows both',
    for: '0m',
  },
  'webhook-verification-failed': {
    summary: 'webhook requests failed verification',
    action: 'compare the webhook secret with the operator; check clocks; unknown senders may be probing',
    for: '15m',
  },
  'webhook-unmatched': {
    summary: 'decisions name operations this marketplace never queued',
    action: 'look up their refs in webhook_events; another system may report under this marketplace',
    for: '15m',
  },
  'webhook-undecided': {
    summary:
      'webhooks carried a decision word in no list, or a type and status that disagree; nothing applied',
    action:
      "SELECT event_type, event_status FROM webhook_events WHERE outcome = 'undecided'; add a real decision word to webhook.decisions and restart",
    for: '0m',
  },
  'webhook-id-reused': {
    summary: 'the operator reused webhook ids with other bodies (each recorded and applied as new)',
    action: 'ask the operator to make webhook ids unique; SELECT * FROM webhook_events WHERE id_reused = 1',
    for: '0m',
  },
  'database-corrupt': {
    summary: 'the database file is damaged; every write is refused',
    action:
      'stop the daemon, restore the newest backup (and remove -wal/-shm), start it, re-queue operations queued since',
    for: '0m',
  },
  'database-write-failed': {
    summary: 'database writes fail (disk full, read-only file, I/O error); enqueues answer 503',
    action:
      'free space on the database file system or fix ownership of the database, -wal and -shm; restart if it was read-only',
  },
  'database-unreadable': {
    summary: 'status cannot read the database',
    action:
      'SQLite: check the file, its permissions and the kernel log for I/O errors; PostgreSQL: vcu-sync status names the fix (login, database, server)',
  },
  'database-unreachable': {
    summary: 'PostgreSQL cannot be reached; the API and webhooks answer 503',
    action: 'check the server (pg_isready, its log) and the network; the daemon reconnects on its own',
  },
  'database-locked': {
    summary: 'another process holds the database write lock; API writes answer 503',
    action: 'find the holder (fuser -v or lsof on the database file) and end its transaction',
    for: '2m',
  },
  'subscriber-dead-letter': {
    summary: 'subscriber deliveries ran out of attempts or age and sit in the dead letter',
    action:
      'vcu-sync deliveries list --state dead; fix the subscriber, then vcu-sync deliveries redrive --since 3d',
    for: '0m',
  },
  'replica-dead': {
    summary: 'a PostgreSQL replica is gone while holding claims or a sync run, or its heartbeat stopped',
    action: "check the replica named in vcu-sync status; a live replica hands a dead one's claims back",
  },
  'subscriber-failing': {
    summary: "a subscriber's oldest undelivered event is older than subscriber_delivery.failing_warn_minutes",
    action: 'check the subscriber answers 2xx to a signed POST; vcu-sync deliveries list --subscriber NAME',
    for: '15m',
  },
  'records-quarantined': {
    summary: 'records the operator sent could not be read',
    action:
      'SELECT resource, record_id, reason FROM quarantine WHERE resolved_at IS NULL; report them to the operator',
    for: '15m',
  },
  // A recorded change is a fact, not a blip: it fires at once and stays for sync.schema.problem_hours.
  'upstream-schema-changed': {
    summary:
      "the operator's records changed shape (critical: a mapped field changed, or records are quarantined)",
    action:
      'vcu-sync schema RESOURCE; a new field needs nothing; quarantined records: wait for a release or set [sync.schema] on_type_change = "store" and restart; a new state value: tell the apps',
    for: '0m',
  },
  // Findings stay open until a pass no longer finds them: the default waits (1m critical, 10m
  // warning) only let the pass that follows a sync page settle what that page's timing raised.
  'ledger-mismatch': {
    summary:
      "the marketplace's reported operations disagree with the registry's data (critical: tokens outstanding below zero or beyond the issuance)",
    action:
      'vcu-sync reconcile (--issuance ID for one) lists the findings with their figures; docs/reconciliation.md says what to do per kind',
  },
};

/**
 * "sending-paused" -> "VcuSyncSendingPaused" (alert names are Prometheus metric-style names); a code
 * raised at both severities names its critical alert apart ("VcuSyncQueueOldCritical").
 */
export function alertName(code: string, severity?: string): string {
  const camel = code
    .split('-')
    .map((w) => w.charAt(0).toUpperCase() + w.slice(1))
    .join('');
  const both = (PROBLEM_SEVERITIES as Record<string, readonly string[]>)[code]?.length === 2;
  return `VcuSync${camel}${severity === 'critical' && both ? 'Critical' : ''}`;
}

const runbook = (anchor: string) => `http://{{ $labels.instance }}/runbook#${anchor}`;

export function alertRules(job = DEFAULT_JOB): AlertRule[] {
  const rules: AlertRule[] = [];
  for (const [code, severities] of Object.entries(PROBLEM_SEVERITIES) as Array<
    [ProblemCode, ReadonlyArray<'warning' | 'critical'>]
  >) {
    const step = STEPS[code];
    for (const severity of severities) {
      rules.push({
        alert: alertName(code, severity),
        expr: `vcu_sync_problem{job="${job}",code="${code}",severity="${severity}"} == 1`,
        for: step.for ?? (severity === 'critical' ? '1m' : '10m'),
        labels: { severity, code },
        annotations: {
          summary: `vcu-sync {{ $labels.instance }}: ${step.summary}`,
          action: step.action,
          runbook_url: runbook(code),
        },
      });
    }
  }
  rules.push(
    {
      alert: 'VcuSyncTargetDown',
      expr: `up{job="${job}"} == 0`,
      for: '2m',
      labels: { severity: 'critical', code: 'target-down' },
      annotations: {
        summary: 'vcu-sync {{ $labels.instance }}: Prometheus cannot scrape it (daemon down or unreachable)',
        action: 'systemctl status vcu-sync; journalctl -u vcu-sync -n 100; curl http://HOST:PORT/healthz',
        runbook_url: runbook('alerts-prometheus-raises-itself'),
      },
    },
    {
      alert: 'VcuSyncMetricsAbsent',
      expr: `absent(vcu_sync_build_info{job="${job}"})`,
      for: '10m',
      labels: { severity: 'critical', code: 'metrics-absent' },
      annotations: {
        summary: 'no vcu-sync metrics at all: the target is gone from discovery or exports nothing',
        action:
          'check the Prometheus scrape config (job vcu-sync) and that the daemon runs; curl /metrics with the token',
        runbook_url: 'README.md#alerts-prometheus-raises-itself',
      },
    },
  );
  return rules;
}

/** The rules as a Prometheus rule file. Strings are JSON-quoted, which YAML reads as they are. */
export function renderAlertRulesYaml(rules: readonly AlertRule[]): string {
  const q = (s: string) => JSON.stringify(s);
  const lines = [
    '# Prometheus alerting rules for vcu-sync. Generated by `npm run alerts:generate` from',
    '# src/health/alertRules.ts; do not edit by hand. Load with rule_files in prometheus.yml; the',
    `# rules select job="${DEFAULT_JOB}" (for another job name: npm run alerts:generate -- --job NAME).`,
    'groups:',
    '  - name: vcu-sync',
    '    rules:',
  ];
  for (const r of rules) {
    lines.push(
      `      - alert: ${r.alert}`,
      `        expr: ${q(r.expr)}`,
      `        for: ${r.for}`,
      '        labels:',
    );
    for (const [k, v] of Object.entries(r.labels)) lines.push(`          ${k}: ${q(v)}`);
    lines.push('        annotations:');
    for (const [k, v] of Object.entries(r.annotations)) lines.push(`          ${k}: ${q(v)}`);
  }
  return `${lines.join('\n')}\n`;
}

// `tsx src/health/alertRules.ts [--job NAME]` prints the rule file.
if (process.argv[1]?.endsWith('alertRules.ts')) {
  const i = process.argv.indexOf('--job');
  process.stdout.write(renderAlertRulesYaml(alertRules(i > 0 ? process.argv[i + 1] : DEFAULT_JOB)));
}
