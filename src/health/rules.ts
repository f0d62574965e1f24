import { databaseProblems } from './databaseRules.js';
import { ageMs, formatDuration } from './durations.js';
import type { Problem, RuleInputs, Severity } from './problems.js';
import { reconcileProblems } from './reconcileRules.js';
import { schemaProblems } from './schemaRules.js';
import type { HealthSnapshot } from './snapshot.js';

export { LOCK_WARNING_MS } from './databaseRules.js';
export { formatDuration } from './durations.js';
export {
  PROBLEM_CODES,
  PROBLEM_SEVERITIES,
  type Problem,
  type ProblemCode,
  type RuleInputs,
  type Severity,
} from './problems.js';

/**
 * Health rules: pure functions from a snapshot to problems, each with what it means and what to
 * do. The same rules answer `vcu-sync status`, `GET /status`, the status page and the metrics.
 * Exit codes follow the Nagios convention: 0 ok, 1 warning, 2 critical.
 */

/** Queued work older than this is a warning, then critical (ms). */
export const QUEUE_AGE_WARNING_MS = 15 * 60_000;
export const QUEUE_AGE_CRITICAL_MS = 6 * 60 * 60_000;

/** A PostgreSQL replica's heartbeat older than this is stale (ms): several missed beats. */
export const REPLICA_STALE_MS = 2 * 60_000;

function syncProblems(snapshot: HealthSnapshot, inputs: RuleInputs): Problem[] {
  const problems: Problem[] = [];
  for (const r of snapshot.resources) {
    const period = inputs.periods[r.resource] ?? null;
    const run = r.lastRun;
    if (run?.status === 'failed' && run.error && /\b40[13]\b|auth/i.test(run.error)) {
      problems.push({
        severity: 'critical',
        code: 'operator-auth',
        message: `${r.resource} sync refused by the operator: ${run.error}`,
        action:
          'check the API key (credential api-key) and operator.auth; ask the operator whether the key was revoked',
      });
      continue;
    }
    if (run?.status === 'failed') {
      problems.push({
        severity: 'warning',
        code: 'sync-failed',
        message: `last ${r.resource} sync failed: ${run.error ?? 'no error recorded'}`,
        action: `read the log (event sync.run.finished, status failed); run "vcu-sync sync ${r.resource}" to retry now`,
      });
    }
    if (period === null) continue;
    const age = ageMs(r.lastSuccessAt, inputs.now);
    if (age === null) {
      if (run === null) {
        problems.push({
          severity: 'warning',
          code: 'sync-never',
          message: `${r.resource} has never been synced`,
          action: `start the daemon or run "vcu-sync sync ${r.resource}"`,
        });
      }
    } else if (age > period * inputs.stalePeriods) {
      problems.push({
        severity: 'warning',
        code: 'sync-stale',
        message: `${r.resource} last synced ${formatDuration(age)} ago (schedule every ${formatDuration(period)})`,
        action: 'check the daemon is running and the operator reachable (vcu-sync sync to retry)',
      });
    }
  }
  return problems;
}

function outboxProblems(snapshot: HealthSnapshot, inputs: RuleInputs): Problem[] {
  const problems: Problem[] = [];
  const { outbox } = snapshot;
  if (outbox.paused) {
    problems.push({
      severity: 'critical',
      code: 'sending-paused',
      message: `sending to /notify is paused since ${outbox.paused.since || 'an unknown time'}: ${outbox.paused.reason}`,
      action:
        'the operator refused our credentials: fix the API key; sending resumes by itself once a probe succeeds',
    });
  }
  const failed = outbox.byState.failed ?? 0;
  if (failed > 0) {
    problems.push({
      severity: 'warning',
      code: 'operations-failed',
      message: `${failed} operation${failed === 1 ? '' : 's'} failed and will not be retried`,
      action:
        'vcu-sync outbox list --state failed; fix the cause, then vcu-sync outbox retry REF (or cancel REF)',
    });
  }
  const queuedAge = ageMs(outbox.oldestQueuedAt, inputs.now);
  if (queuedAge !== null && queuedAge > QUEUE_AGE_WARNING_MS) {
    problems.push({
      severity: queuedAge > QUEUE_AGE_CRITICAL_MS ? 'critical' : 'warning',
      code: 'queue-old',
      message: `oldest unsent operation is ${formatDuration(queuedAge)} old (${(outbox.byState.queued ?? 0) + (outbox.byState.sending ?? 0)} waiting)`,
      action:
        'check the operator is reachable and the daemon running; vcu-sync outbox list shows last errors',
    });
  }
  const waiting = outbox.byState.accepted ?? 0;
  if (outbox.awaitingDecision > 0 || waiting > inputs.decisionWarnCount) {
    const oldest = ageMs(outbox.oldestAcceptedAt, inputs.now);
    const why =
      outbox.awaitingDecision > 0
        ? `${outbox.awaitingDecision} of them for over ${inputs.decisionWarnHours}h`
        : `more than ${inputs.decisionWarnCount}`;
    problems.push({
      severity: 'warning',
      code: 'decision-overdue',
      message: `${waiting} accepted operation${waiting === 1 ? '' : 's'} waiting for a decision (${why}; oldest ${oldest === null ? '-' : formatDuration(oldest)})`,
      action:
        'check webhook delivery first (webhook listener reachable from the operator, secret right, vcu-sync status shows webhooks received); then ask the operator about the oldest refs (vcu-sync outbox list --state accepted)',
    });
  }
  if (snapshot.rejections.since > 0) {
    const last = snapshot.rejections.recent[0];
    problems.push({
      severity: 'warning',
      code: 'operations-rejected',
      message: `${snapshot.rejections.since} operation${snapshot.rejections.since === 1 ? '' : 's'} rejected by the operator in the last 24h${last ? ` (latest ${last.ref}: ${last.reason ?? 'no reason given'})` : ''}`,
      action:
        'investigate each rejection and reverse the internal operation if needed (vcu-sync outbox show REF)',
    });
  }
  return problems;
}

function inboxProblems(snapshot: HealthSnapshot): Problem[] {
  const problems: Problem[] = [];
  const { webhooks } = snapshot;
  if (webhooks.conflicts > 0) {
    problems.push({
      severity: 'critical',
      code: 'decision-conflict',
      message: `${webhooks.conflicts} webhook${webhooks.conflicts === 1 ? '' : 's'} contradicted an earlier decision`,
      action:
        'ask the operator which decision stands; the first one is applied, the others are in webhook_events',
    });
  }
  if (webhooks.verificationFailures > 0) {
    problems.push({
      severity: 'warning',
      code: 'webhook-verification-failed',
      message: `${webhooks.verificationFailures} webhook request${webhooks.verificationFailures === 1 ? '' : 's'} failed verification in the last 24h (latest: ${webhooks.lastFailureReason ?? 'unknown'})`,
      action:
        'compare the webhook secret with the operator; check clocks (timestamp tolerance); could be probing',
    });
  }
  if (webhooks.pendingOlderThanCutoff > 0) {
    problems.push({
      severity: 'warning',
      code: 'webhook-unmatched',
      message: `${webhooks.pendingOlderThanCutoff} decision webhook${webhooks.pendingOlderThanCutoff === 1 ? '' : 's'} name operations this marketplace never queued`,
      action: 'check webhook_events for their refs; another system may be reporting under this marketplace',
    });
  }
  if (webhooks.undecided > 0) {
    const last = webhooks.lastUndecided;
    const words = last
      ? `type ${JSON.stringify(last.type)}, status ${JSON.stringify(last.status)}`
      : 'unknown';
    problems.push({
      severity: 'warning',
      code: 'webhook-undecided',
      message: `${webhooks.undecided} webhook${webhooks.undecided === 1 ? '' : 's'} in the last 24h carried no decision the vocabulary can read (latest: ${words}); not applied`,
      action:
        "SELECT event_type, event_status, marketplaceTransactionRef FROM webhook_events WHERE outcome = 'undecided'; add real decision words to webhook.decisions and restart (undecided events are read again at start-up)",
    });
  }
  if (webhooks.idReused > 0) {
    problems.push({
      severity: 'warning',
      code: 'webhook-id-reused',
      message: `${webhooks.idReused} webhook${webhooks.idReused === 1 ? '' : 's'} in the last 24h reused an earlier webhook id with another body; each was recorded and applied as a new event`,
      action:
        'the sender reuses message ids (a restarted counter?): ask the operator to make them unique; SELECT * FROM webhook_events WHERE id_reused = 1',
    });
  }
  const quarantined = Object.entries(snapshot.quarantine).filter(([, n]) => n > 0);
  if (quarantined.length > 0) {
    problems.push({
      severity: 'warning',
      code: 'records-quarantined',
      message: `records the operator sent that could not be read: ${quarantined.map(([r, n]) => `${r} ${n}`).join(', ')}`,
      action:
        'SELECT resource, record_id, reason FROM quarantine WHERE resolved_at IS NULL; report them to the operator',
    });
  }
  return problems;
}

function subscriberProblems(snapshot: HealthSnapshot, inputs: RuleInputs): Problem[] {
  const problems: Problem[] = [];
  const backlogs = snapshot.subscribers ?? [];
  const dead = backlogs.filter((b) => b.dead > 0);
  if (dead.length > 0) {
    problems.push({
      severity: 'warning',
      code: 'subscriber-dead-letter',
      message: `subscriber deliveries in the dead letter: ${dead.map((b) => `${b.subscriber} ${b.dead}`).join(', ')}`,
      action:
        'vcu-sync deliveries list --state dead shows why; once the subscriber takes events again, vcu-sync deliveries redrive --since 3d sends them',
    });
  }
  const limitMs = (inputs.subscriberFailingMinutes ?? 15) * 60_000;
  for (const b of backlogs) {
    const age = ageMs(b.oldestPendingAt, inputs.now);
    if (age === null || age < limitMs) continue;
    problems.push({
      severity: 'warning',
      code: 'subscriber-failing',
      message: `subscriber ${b.subscriber}: ${b.pending} event(s) waiting, the oldest for ${formatDuration(age)}${b.lastError ? ` (last error: ${b.lastError})` : ''}`,
      action:
        'check that the subscriber is up and answers 2xx to a signed POST (vcu-sync deliveries list --subscriber NAME); events wait in order and go out when it answers',
    });
  }
  return problems;
}

/**
 * PostgreSQL replicas: one whose session is gone (liveness lock free) while it still holds claims
 * or a sync run, or whose heartbeat stopped (a hung process keeps its lock but does nothing).
 */
function replicaProblems(snapshot: HealthSnapshot, inputs: RuleInputs): Problem[] {
  const problems: Problem[] = [];
  const staleMs = inputs.replicaStaleMs ?? REPLICA_STALE_MS;
  for (const r of snapshot.replicas ?? []) {
    const age = ageMs(r.lastHeartbeatAt, inputs.now) ?? 0;
    const held = [
      r.claimed > 0 ? `${r.claimed} claimed operation${r.claimed === 1 ? '' : 's'}` : '',
      r.claimedDeliveries > 0
        ? `${r.claimedDeliveries} claimed deliver${r.claimedDeliveries === 1 ? 'y' : 'ies'}`
        : '',
    ].filter(Boolean);
    const holding = held.length > 0 ? `, holding ${held.join(' and ')}` : '';
    if (!r.alive && held.length > 0) {
      problems.push({
        severity: 'warning',
        code: 'replica-dead',
        message: `replica ${r.name} (${r.owner}) is gone (its liveness lock is free)${holding}; last heartbeat ${formatDuration(age)} ago`,
        action:
          "a live replica's sweep hands its claims back within seconds (at its start, then every 2 s): if this lasts, no replica is alive; start one; vcu-sync status lists the replicas",
      });
    } else if (age > staleMs) {
      problems.push({
        severity: 'warning',
        code: 'replica-dead',
        message: `replica ${r.name} (${r.owner}) has not sent a heartbeat for ${formatDuration(age)}${r.alive ? ' though its session holds its lock' : ''}${holding}`,
        action:
          "check that process (hung? host under load?); ending its session (pg_terminate_backend of the replica's liveness session) hands its claims back",
      });
    }
  }
  for (const run of snapshot.runningSyncs ?? []) {
    if (run.lockHeld) continue;
    problems.push({
      severity: 'warning',
      code: 'replica-dead',
      message: `${run.resource} sync run ${run.id} is marked running but no replica holds its run lock: the replica running it is gone`,
      action: `a live replica's sweep (every 2 s) marks it interrupted and the next ${run.resource} sync resumes from its checkpoint: if this lasts, no replica is alive; start one, or run "vcu-sync sync ${run.resource}"`,
    });
  }
  return problems;
}

const RANK: Record<Severity, number> = { ok: 0, warning: 1, critical: 2 };

/** All problems, the worst first, and the overall severity. */
export function judge(
  snapshot: HealthSnapshot,
  inputs: RuleInputs,
): { status: Severity; problems: Problem[] } {
  const problems = [
    ...databaseProblems(snapshot, inputs),
    ...syncProblems(snapshot, inputs),
    ...outboxProblems(snapshot, inputs),
    ...inboxProblems(snapshot),
    ...schemaProblems(snapshot, inputs),
    ...reconcileProblems(snapshot, inputs),
    ...subscriberProblems(snapshot, inputs),
    ...replicaProblems(snapshot, inputs),
  ];
  problems.sort((a, b) => RANK[b.severity] - RANK[a.severity]);
  const status = problems.reduce<Severity>(
    (worst, p) => (RANK[p.severity] > RANK[worst] ? p.severity : worst),
    'ok',
  );
  return { status, problems };
}

/** Nagios exit code of a severity. */
export function exitCodeOf(status: Severity): number {
  return RANK[status];
}
