import type { FaultName } from './faults.js';
import type { ProducerRequest } from './producer.js';

/**
 * What the chaos harness concludes from what it observed: pure (no I/O), so the figures the tests
 * assert and the bench prints come from one place. A phase's completion rate is the operations that
 * reached a final state per second of its window (their `finished_at`), as a ratio of the clean
 * phase's; duplicates are the operator's /notify receipts of a ref beyond its first, counted in the
 * window where they arrived.
 */

/** A window of the run: the clean phase, a fault, or the recovery after it. */
export interface PhaseWindow {
  kind: 'clean' | 'fault' | 'recovery';
  fault: FaultName | null;
  startMs: number;
  endMs: number;
  /** Sends in flight when the fault struck (fault windows only; 0 elsewhere). */
  inFlightAtFault: number;
  /** The injector's own words on what it did (fault windows only). */
  detail: string;
}

/** What was observed, at the end of a run. */
export interface ChaosObservations {
  windows: readonly PhaseWindow[];
  requests: readonly ProducerRequest[];
  produced: ReadonlyArray<{ ref: string; atMs: number }>;
  acknowledged: ReadonlySet<string>;
  /** Every outbox row. */
  rows: ReadonlyArray<{ ref: string; state: string; finishedAtMs: number | null }>;
  /** Every /notify the operator received with a ref. */
  notifications: ReadonlyArray<{ ref: string; atMs: number }>;
  /** Every decision webhook the operator sent: the decision's ref, its message id, whether a receiver answered 2xx. */
  decisions: ReadonlyArray<{ ref: string; id: string; decided: 'approved' | 'rejected'; delivered: boolean }>;
  /** Message ids recorded in webhook_events. */
  recordedWebhookIds: ReadonlySet<string>;
  /** Replica processes that ended without the harness killing them. */
  unexpectedExits: number;
  /** Replicas running at the end. */
  aliveAtEnd: number;
  replicas: number;
}

/** One fault's figures. */
export interface PhaseVerdict {
  fault: FaultName;
  /** Completion rate during the fault and in the recovery after it, as ratios of the clean rate. */
  rateDuring: number;
  rateAfter: number;
  /** /notify receipts beyond a ref's first, during the fault and its recovery. */
  duplicates: number;
  inFlightAtFault: number;
  /** Acknowledged refs produced in the fault or its recovery that did not end in a final state. */
  lostAcknowledged: number;
  /** Decisions on refs produced in the fault or its recovery that were not recorded. */
  lostDecisions: number;
  /** The longest API request started in the fault or its recovery, ms. */
  maxLatencyMs: number;
  /** Requests of the fault or its recovery that got no answer before the producer gave up. */
  hung: number;
  /** Ticks of the fault or its recovery not sent: the producer's every slot was busy. */
  shed: number;
  detail: string;
}

/** The whole run's figures. */
export interface ChaosVerdict {
  /** Operations finished per second in the clean phase. */
  cleanRate: number;
  phases: PhaseVerdict[];
  /** Totals over the whole run (the clean phase included). */
  duplicates: number;
  /** The first duplicated refs with their receipt times (ms into the run), for a failure's message. */
  duplicated: Array<{ ref: string; receivedAt: number[] }>;
  inFlightAtFaults: number;
  lostAcknowledged: string[];
  lostDecisions: string[];
  /** Rows not in a final state at the end. */
  unfinished: string[];
  hung: number;
  shed: number;
  maxLatencyMs: number;
  acknowledged: number;
  unexpectedExits: number;
  aliveAtEnd: number;
  replicas: number;
}

const FINAL = new Set(['approved', 'rejected', 'failed', 'cancelled']);

const within = (atMs: number, w: { startMs: number; endMs: number }) => atMs >= w.startMs && atMs < w.endMs;

/** The largest value, 0 for none (no spread: a run has tens of thousands of requests). */
const maxOf = (values: readonly number[]) => values.reduce((m, v) => (v > m ? v : m), 0);

const seconds = (w: PhaseWindow) => Math.max(0.001, (w.endMs - w.startMs) / 1000);

/** Operations finished per second in the window. */
export function completionRate(rows: ChaosObservations['rows'], w: PhaseWindow): number {
  return rows.filter((r) => r.finishedAtMs !== null && within(r.finishedAtMs, w)).length / seconds(w);
}

/** Receipt times of every /notify after a ref's first. */
export function duplicateReceipts(notifications: ChaosObservations['notifications']): number[] {
  const seen = new Set<string>();
  const extra: number[] = [];
  for (const n of [...notifications].sort((a, b) => a.atMs - b.atMs)) {
    if (seen.has(n.ref)) extra.push(n.atMs);
    else seen.add(n.ref);
  }
  return extra;
}

/** Refs received more than once, with every receipt time in ms after `originMs`. */
export function duplicatedRefs(
  notifications: ChaosObservations['notifications'],
  originMs: number,
): Array<{ ref: string; receivedAt: number[] }> {
  const byRef = new Map<string, number[]>();
  for (const n of notifications) byRef.set(n.ref, [...(byRef.get(n.ref) ?? []), n.atMs - originMs]);
  return [...byRef]
    .filter(([, times]) => times.length > 1)
    .map(([ref, times]) => ({ ref, receivedAt: times.sort((a, b) => a - b) }));
}

/** Acknowledged refs whose row is missing or not final. */
export function lostAcknowledged(obs: ChaosObservations): string[] {
  const state = new Map(obs.rows.map((r) => [r.ref, r.state]));
  return [...obs.acknowledged].filter((ref) => !FINAL.has(state.get(ref) ?? 'missing')).sort();
}

/**
 * Decisions lost: a decision whose row does not carry it, or a webhook a replica answered 2xx
 * without recording it (a receiver must never acknowledge what it did not store).
 */
export function lostDecisions(obs: ChaosObservations): string[] {
  const state = new Map(obs.rows.map((r) => [r.ref, r.state]));
  const lost = new Set<string>();
  for (const d of obs.decisions) {
    if (state.get(d.ref) !== d.decided) lost.add(d.ref);
    if (d.delivered && !obs.recordedWebhookIds.has(d.id)) lost.add(d.ref);
  }
  return [...lost].sort();
}

/** The figures of the run; `windows` must start with the clean phase. */
export function chaosVerdict(obs: ChaosObservations): ChaosVerdict {
  const clean = obs.windows.find((w) => w.kind === 'clean');
  if (!clean) throw new Error('a chaos run starts with a clean phase');
  const cleanRate = completionRate(obs.rows, clean);
  const ratio = (w: PhaseWindow | undefined) =>
    w === undefined || cleanRate === 0 ? 0 : completionRate(obs.rows, w) / cleanRate;
  const duplicates = duplicateReceipts(obs.notifications);
  const lostAck = lostAcknowledged(obs);
  const lostDec = lostDecisions(obs);
  const producedAt = new Map(obs.produced.map((p) => [p.ref, p.atMs]));
  const producedIn = (refs: readonly string[], spans: PhaseWindow[]) =>
    refs.filter((ref) => spans.some((w) => within(producedAt.get(ref) ?? -1, w))).length;
  const phases: PhaseVerdict[] = [];
  obs.windows.forEach((w, i) => {
    if (w.kind !== 'fault' || w.fault === null) return;
    const next = obs.windows[i + 1];
    const after = next?.kind === 'recovery' ? next : undefined;
    const spans = after ? [w, after] : [w];
    const requests = obs.requests.filter((r) => spans.some((s) => within(r.startedMs, s)));
    phases.push({
      fault: w.fault,
      rateDuring: ratio(w),
      rateAfter: ratio(after),
      duplicates: duplicates.filter((at) => spans.some((s) => within(at, s))).length,
      inFlightAtFault: w.inFlightAtFault,
      lostAcknowledged: producedIn(lostAck, spans),
      lostDecisions: producedIn(lostDec, spans),
      maxLatencyMs: maxOf(requests.map((r) => r.ms)),
      hung: requests.filter((r) => r.outcome === 'hung').length,
      shed: requests.filter((r) => r.outcome === 'shed').length,
      detail: w.detail,
    });
  });
  return {
    cleanRate,
    phases,
    duplicates: duplicates.length,
    duplicated: duplicatedRefs(obs.notifications, clean.startMs).slice(0, 20),
    inFlightAtFaults: obs.windows.reduce((sum, w) => sum + w.inFlightAtFault, 0),
    lostAcknowledged: lostAck,
    lostDecisions: lostDec,
    unfinished: obs.rows.filter((r) => !FINAL.has(r.state)).map((r) => r.ref),
    hung: obs.requests.filter((r) => r.outcome === 'hung').length,
    shed: obs.requests.filter((r) => r.outcome === 'shed').length,
    maxLatencyMs: maxOf(obs.requests.map((r) => r.ms)),
    acknowledged: obs.acknowledged.size,
    unexpectedExits: obs.unexpectedExits,
    aliveAtEnd: obs.aliveAtEnd,
    replicas: obs.replicas,
  };
}
