import { type Clock, isoAt } from '../common/clock.js';
import { errorMessage } from '../common/errors.js';
import type { RequestSync } from '../common/syncRequests.js';
import type { AppContext } from '../context.js';
import type { DecisionEffect } from '../inbox/correlate.js';
import { reportDecisionEffects } from '../inbox/report.js';
import type { OperationRow } from '../operations/rows.js';
import type { OperationsStore } from '../operations/storeSeam.js';
import type { OutboxHooks } from './hooks.js';
import type { NextStep } from './nextStep.js';
import { logStep } from './settle.js';

/**
 * What follows a dispatcher's send: the inbox side of an accepted row, the step's log line, a
 * lease found lost, a settle that could not be recorded, a row handed back. Free functions given what they need, so the
 * dispatcher's class keeps the loop, claims and sends.
 */

/** What {@link afterSettle} needs from the daemon. */
export interface SettleEffectsDeps extends Pick<AppContext, 'log' | 'metrics'> {
  requestSync: RequestSync | undefined;
  onCommitted: (() => void) | undefined;
}

/**
 * The hooks' inbox side of an accepted row; a failure is logged, not thrown: the row is settled
 * all the same, and the inbox's periodic sweep applies its early decisions later.
 */
export function inboxEffects(
  hooks: OutboxHooks | null,
  log: AppContext['log'],
  row: OperationRow,
  nowIso: string,
  settled: Promise<boolean>,
): Promise<DecisionEffect[]> | undefined {
  return hooks?.afterAccepted(row, nowIso, settled).catch((err: unknown) => {
    log.error(
      { event: 'outbox.inbox.error', ref: row.marketplaceTransactionRef, id: row.id, err },
      `could not apply the early decisions of ${row.marketplaceTransactionRef}: ${errorMessage(err)}`,
    );
    return [];
  });
}

export function logSettleError(log: AppContext['log'], row: OperationRow, err: unknown): void {
  // The lease runs out and the row is claimed again: at-least-once, never lost.
  log.error(
    { event: 'outbox.settle.error', ref: row.marketplaceTransactionRef, err },
    `could not record the attempt: ${errorMessage(err)}`,
  );
}

/**
 * Once the settle commits (or is given up): its inbox effects, the step's log (only when this
 * dispatcher's settle was the one recorded), the lease lost.
 */
export async function afterSettle(
  deps: SettleEffectsDeps,
  row: OperationRow,
  next: NextStep,
  reportStep: boolean,
  settling: Promise<boolean>,
  inbox: Promise<DecisionEffect[]> | undefined,
): Promise<void> {
  const ref = row.marketplaceTransactionRef;
  const settled = await settling;
  const effects = inbox ? await inbox : [];
  deps.onCommitted?.();
  if (!settled) {
    deps.log.warn(
      { event: 'outbox.lease.lost', ref, id: row.id },
      `lease on ${ref} was taken over; its new owner settles it`,
    );
  } else if (reportStep) logStep(deps.log, row, next);
  if (effects.length > 0)
    reportDecisionEffects({ log: deps.log, metrics: deps.metrics, requestSync: deps.requestSync }, effects);
}

/** Why a row went back unsent (or with its request cancelled), as its log line says it. */
const RELEASED = {
  stop: 'request cancelled by the stop; row queued again',
  pause: 'claimed as sending paused; row queued again unsent',
  unsent: 'claimed ahead, still unsent at the stop; row queued again',
  liveness: 'claimed ahead before the liveness lock was lost; row queued again unsent',
  lease: 'claimed ahead too long ago for its lease to cover a request; row queued again unsent',
} as const;

/**
 * Hands a row back to the queue: its request cancelled by a stop (the operator may have received
 * it: delivery is at-least-once and the ref is the same on the next attempt), or claimed unsent
 * when a stop or an auth pause came first. A failure is logged: the lease runs out and another
 * claim takes the row, late, never lost.
 */
export async function releaseRow(
  deps: { store: OperationsStore; owner: string; clock: Clock; log: AppContext['log'] },
  row: OperationRow,
  cause: keyof typeof RELEASED,
): Promise<void> {
  const ref = row.marketplaceTransactionRef;
  try {
    const released = await deps.store.release({
      id: row.id,
      ref,
      owner: deps.owner,
      now: isoAt(deps.clock.now()),
    });
    deps.log.warn(
      { event: 'outbox.released', ref, id: row.id, released, cause },
      `${ref}: ${RELEASED[cause]}`,
    );
  } catch (err) {
    deps.log.error(
      { event: 'outbox.release.error', ref, id: row.id, err },
      `could not release ${ref}: ${errorMessage(err)}`,
    );
  }
}
