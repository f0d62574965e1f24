/**
 * Occasional housekeeping of the inbox: the pending-decision safety net and the bound on stored
 * refusals.
 */
import { isoAt } from '../clock.js';
import type { AppContext } from '../context.js';
import type { RequestSync } from '../syncRequests.js';
import { sweepPendingDecisions } from './correlate.js';
import { pruneRejections } from './eventStore.js';
import { reportDecisionEffects } from './report.js';
import { rereadUndecided } from './reread.js';
import { compileVocabulary } from './vocabulary.js';

/** Refusals older than this are deleted. */
export const REJECTION_RETENTION_MS = 7 * 24 * 3600 * 1000;

/** Applies ready pending decisions and prunes old refusals; returns what it did. */
export function runInboxMaintenance(
  ctx: Pick<AppContext, 'database' | 'clock' | 'log' | 'metrics'> & { requestSync?: RequestSync | undefined },
): {
  applied: number;
  pruned: number;
} {
  const now = ctx.clock.now();
  const { sqlite } = ctx.database;
  const { effects, pruned } = sqlite
    .transaction(() => ({
      effects: sweepPendingDecisions(sqlite, isoAt(now)),
      pruned: pruneRejections(sqlite, isoAt(now - REJECTION_RETENTION_MS)),
    }))
    .immediate();
  reportDecisionEffects(ctx, effects);
  if (effects.length > 0 || pruned > 0) {
    ctx.log.info({ event: 'webhook.maintenance', applied: effects.length, pruned }, 'inbox maintenance');
  }
  return { applied: effects.length, pruned };
}

/** Reads undecided events again with the configured vocabulary (at start-up); returns how many now decide. */
export function rereadAtStart(
  ctx: Pick<AppContext, 'database' | 'clock' | 'log' | 'metrics' | 'config'> & {
    requestSync?: RequestSync | undefined;
  },
): number {
  const { sqlite } = ctx.database;
  const cfg = ctx.config.webhook;
  const vocabulary = compileVocabulary(cfg.decisions);
  const nowIso = isoAt(ctx.clock.now());
  const { resolved, effects } = sqlite
    .transaction(() => rereadUndecided(sqlite, cfg.fields, vocabulary, nowIso))
    .immediate();
  reportDecisionEffects(ctx, effects);
  if (resolved > 0) {
    ctx.log.info(
      { event: 'webhook.undecided.reread', resolved, applied: effects.length },
      'undecided webhooks read again with the current webhook.decisions',
    );
  }
  return resolved;
}
