/**
 * Occasional housekeeping of the inbox: the pending-decision safety net and the bound on stored
 * refusals.
 */
import { isoAt } from '../clock.js';
import type { AppContext } from '../context.js';
import type { RequestSync } from '../syncRequests.js';
import { sqliteInboxStore } from './inboxStore.js';
import { reportDecisionEffects } from './report.js';
import type { InboxStore } from './storeSeam.js';
import { compileVocabulary } from './vocabulary.js';

/** Refusals older than this are deleted. */
export const REJECTION_RETENTION_MS = 7 * 24 * 3600 * 1000;

/** What the maintenance jobs need: the context, and the store (default: the context's SQLite database). */
type MaintenanceContext<K extends keyof AppContext> = Pick<AppContext, K> & {
  requestSync?: RequestSync | undefined;
  store?: InboxStore | undefined;
};

const storeOf = (ctx: MaintenanceContext<'database'>): InboxStore =>
  ctx.store ?? sqliteInboxStore(ctx.database.sqlite);

/** Applies ready pending decisions and prunes old refusals (one transaction); returns what it did. */
export async function runInboxMaintenance(
  ctx: MaintenanceContext<'database' | 'clock' | 'log' | 'metrics'>,
): Promise<{
  applied: number;
  pruned: number;
}> {
  const now = ctx.clock.now();
  const { effects, pruned } = await storeOf(ctx).maintain(isoAt(now), isoAt(now - REJECTION_RETENTION_MS));
  reportDecisionEffects(ctx, effects);
  if (effects.length > 0 || pruned > 0) {
    ctx.log.info({ event: 'webhook.maintenance', applied: effects.length, pruned }, 'inbox maintenance');
  }
  return { applied: effects.length, pruned };
}

/** Reads undecided events again with the configured vocabulary (at start-up); returns how many now decide. */
export async function rereadAtStart(
  ctx: MaintenanceContext<'database' | 'clock' | 'log' | 'metrics' | 'config'>,
): Promise<number> {
  const cfg = ctx.config.webhook;
  const vocabulary = compileVocabulary(cfg.decisions);
  const nowIso = isoAt(ctx.clock.now());
  const { resolved, effects } = await storeOf(ctx).rereadUndecided(cfg.fields, vocabulary, nowIso);
  reportDecisionEffects(ctx, effects);
  if (resolved > 0) {
    ctx.log.info(
      { event: 'webhook.undecided.reread', resolved, applied: effects.length },
      'undecided webhooks read again with the current webhook.decisions',
    );
  }
  return resolved;
}
