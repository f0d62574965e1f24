/**
 * After the commit: make decisions visible. Rejections are loud (an operator said no to something
 * the marketplace already did), conflicts are critical, deposits start a custody sync.
 * Only refs, ids and the operator's reason are logged: never a payload, never personal data.
 */

import { errorMessage } from '../common/errors.js';
import type { RequestSync } from '../common/syncRequests.js';
import type { AppContext } from '../context.js';
import type { DecisionEffect } from './correlate.js';

/** The parts of the context reporting needs. */
export type ReportContext = Pick<AppContext, 'log' | 'metrics'> & {
  /** Asks the mirror for a custody sync after a deposit (default: none, nothing is asked). */
  requestSync?: RequestSync | undefined;
};

/** Logs, counts and triggers what committed decisions call for. Never throws. */
export function reportDecisionEffects(ctx: ReportContext, effects: readonly DecisionEffect[]): void {
  for (const effect of effects) {
    switch (effect.kind) {
      case 'approved':
        ctx.log.info(
          { event: 'operation.approved', ref: effect.ref, outboxId: effect.outboxId },
          'operator approved the operation',
        );
        break;
      case 'rejected':
        ctx.metrics.rejections.inc();
        ctx.log.warn(
          { event: 'operation.rejected', ref: effect.ref, outboxId: effect.outboxId, reason: effect.reason },
          'operator REJECTED the operation',
        );
        break;
      case 'conflict':
        ctx.log.error(
          {
            event: 'webhook.decision.conflict',
            ref: effect.ref,
            outboxId: effect.outboxId,
            decision: effect.decision,
            standing: effect.standing,
            webhookId: effect.webhookId,
          },
          'operator sent a decision contradicting the one already applied; not applied, needs a person',
        );
        break;
      case 'unexpected-state':
        ctx.log.warn(
          {
            event: 'webhook.decision.unexpected_state',
            ref: effect.ref,
            outboxId: effect.outboxId,
            state: effect.state,
            decision: effect.decision,
          },
          'decision for an operation this side had given up on; recorded, not applied',
        );
        break;
      case 'undecided':
        ctx.log.warn(
          {
            event: 'webhook.undecided',
            ref: effect.ref,
            outboxId: effect.outboxId,
            webhookId: effect.webhookId,
            type: effect.type,
            status: effect.status,
            why: effect.why,
          },
          'webhook carries no decision this vocabulary can read; stored, not applied (see webhook.decisions)',
        );
        break;
      case 'id-reused':
        ctx.metrics.webhookIdReused.inc();
        ctx.log.warn(
          {
            event: 'webhook.id_reused',
            webhookId: effect.webhookId,
            ref: effect.ref,
            outcome: effect.outcome,
          },
          'webhook id seen before with another body: recorded and acted on as a new event',
        );
        break;
      case 'deposit':
        ctx.log.info(
          { event: 'webhook.deposit', newIds: effect.ids },
          'custody deposit confirmed; requesting a custody sync',
        );
        requestCustodySync(ctx);
        break;
    }
  }
}

function requestCustodySync(ctx: ReportContext): void {
  const request = ctx.requestSync;
  if (!request) return;
  try {
    request(['custody'], 'webhook').catch((err: unknown) => {
      ctx.log.warn(
        { event: 'webhook.deposit.sync_failed', error: errorMessage(err) },
        'could not request a custody sync',
      );
    });
  } catch (err) {
    ctx.log.warn(
      { event: 'webhook.deposit.sync_failed', error: errorMessage(err) },
      'could not request a custody sync',
    );
  }
}
