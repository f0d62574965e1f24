import { createWebhookComponent } from '../../src/inbox/listener.js';
import { runSync } from '../../src/mirror/syncRun.js';
import { createDispatcherComponent } from '../../src/outbox/dispatcher.js';
import { runPass } from '../../src/reconcile/pass.js';
import { DEFAULT_WEBHOOK_SECRET, type Simulator, startSimulator } from '../../src/simulator/index.js';
import { commitQueueFor } from '../../src/sqlite/commitQueue.js';
import { sqliteInboxStore } from '../../src/sqlite/inboxStore.js';
import { sqliteBackend } from '../../src/sqlite/mirror.js';
import { testContext } from '../helpers/context.js';
import { sqliteApiComponent } from '../helpers/sqliteApi.js';
import { cancelQueued, enqueueOperation, sqliteDispatcher, transfer } from '../outbox/fixtures.js';
import { until } from './child.js';

export const TOKEN = 'ops-status-token-0123456789';
export const REJECTION_REASON = 'Insufficient balance in the custody account';

/** A mirror, an outbox and an inbox filled by real activity against the simulator, behind a real API. */
export interface SeededApi {
  sim: Simulator;
  ctx: ReturnType<typeof testContext>;
  base: string;
  close(): Promise<void>;
}

/**
 * Syncs every resource, then sends operations through the real dispatcher: one fails (a 500 with
 * max_attempts = 1), two are approved and one rejected by signed webhooks to the real listener,
 * one is cancelled and one stays queued; then a reconciliation pass records its findings.
 */
export async function seededApi(): Promise<SeededApi> {
  const sim = await startSimulator({
    projects: 15,
    issuances: 30,
    units: 120,
    webhook: { policy: 'approve', delayMs: 10 },
  });
  const ctx = testContext({
    overrides: {
      'operator.url': sim.url,
      'operator.api_key': 'sim-api-key',
      'operator.rate_per_second': 100_000,
      'operator.marketplace_id': 'mkt-ops',
      'api.listen': '127.0.0.1:0',
      'api.token': TOKEN,
      'webhook.listen': '127.0.0.1:0',
      'webhook.secrets': [DEFAULT_WEBHOOK_SECRET],
      'sync.page_size': 50,
      'outbox.poll_ms': 10,
      'outbox.max_attempts': 1,
      'custody.projects': sim.registry.custodyIds('projects').map(String),
      'custody.issuances': sim.registry.custodyIds('issuances').map(String),
      'custody.units': sim.registry.custodyIds('units').map(String),
    },
  });
  // As the daemon wires them: /readyz reads both listeners.
  const listeners = new Map<string, string>();
  const webhook = createWebhookComponent(ctx, { store: sqliteInboxStore(ctx.database.sqlite), listeners });
  await webhook.start();
  sim.webhooks.configure({ url: webhook.address()!.url });

  for (const target of ['projects', 'issuances', 'units', 'custody'] as const) {
    const outcome = await runSync(ctx, target, { backend: sqliteBackend(ctx.database.sqlite) });
    if (outcome.status !== 'succeeded') throw new Error(`seed sync of ${target}: ${outcome.error}`);
  }

  const state = (ref: string) =>
    (
      ctx.database.sqlite.prepare('SELECT state FROM outbox WHERE marketplaceTransactionRef = ?').get(ref) as
        | { state: string }
        | undefined
    )?.state;
  const dispatcher = createDispatcherComponent(ctx, sqliteDispatcher(ctx));
  await dispatcher.start();
  try {
    sim.faults.next(1, '500', { pathPrefix: '/integration/v1/notify' });
    enqueueOperation(ctx, transfer('status-fail-1', { unitId: 70_001 }));
    await until('status-fail-1 failed', () => state('status-fail-1') === 'failed');

    sim.webhooks.setDecision('status-rej-1', 'reject', REJECTION_REASON);
    for (const [i, ref] of ['status-ok-1', 'status-ok-2', 'status-rej-1'].entries()) {
      enqueueOperation(ctx, transfer(ref, { unitId: 70_010 + i }));
    }
    await until(
      'decisions recorded',
      () =>
        state('status-ok-1') === 'approved' &&
        state('status-ok-2') === 'approved' &&
        state('status-rej-1') === 'rejected',
    );
  } finally {
    await dispatcher.stop();
  }
  enqueueOperation(ctx, transfer('status-queued-1', { unitId: 70_020 }));
  enqueueOperation(ctx, transfer('status-cancel-1', { unitId: 70_021 }));
  cancelQueued(ctx, 'status-cancel-1');
  // A reconciliation pass over them: the transfers' units are not in the simulator's custody, so the
  // status page has findings to list.
  await runPass(
    {
      store: commitQueueFor(ctx.database.sqlite),
      settings: { reconcile: ctx.config.reconcile, decisionWarnHours: ctx.config.status.decision_warn_hours },
      now: () => ctx.clock.now(),
    },
    null,
  );

  const api = sqliteApiComponent(ctx, { listeners });
  await api.start();
  return {
    sim,
    ctx,
    base: `http://127.0.0.1:${api.address()!.port}`,
    async close() {
      await api.stop();
      await webhook.stop();
      ctx.operator().close();
      ctx.dispose();
      await sim.close();
    },
  };
}
