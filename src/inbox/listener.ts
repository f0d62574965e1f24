/**
 * The webhook listener as a daemon component: its own HTTP server on `webhook.listen` (separate
 * from the internal API, since this one faces the internet through the reverse proxy), plus
 * occasional inbox maintenance.
 */
import { isoAt } from '../common/clock.js';
import { ConfigError, errorMessage } from '../common/errors.js';
import type { AppContext, Component } from '../context.js';
import { type HttpListener, type ListenersUp, startHttpListener } from '../http/httpListener.js';
import { createWebhookApp, WEBHOOK_PATH, type WebhookAppOptions } from './app.js';
import { reportDecisionEffects } from './report.js';
import { compileVocabulary } from './vocabulary.js';

export { createWebhookApp, WEBHOOK_PATH, type WebhookAppOptions } from './app.js';

/** Options of {@link createWebhookComponent}. */
export interface WebhookComponentOptions extends WebhookAppOptions {
  /** How often pending decisions are swept and old refusals pruned, in ms (default: 60000). */
  maintenanceMs?: number;
  /** How long stop() waits for requests in flight before closing their connections, in ms (default: 5000). */
  stopTimeoutMs?: number;
  /** The listeners up now, shared with the API's /readyz (default: its own, which no /readyz reads). */
  listeners?: ListenersUp;
}

/** Refusals older than this are deleted. */
const REJECTION_RETENTION_MS = 7 * 24 * 3600 * 1000;

/** What the maintenance jobs need: the context's services, the store, and how to ask for syncs. */
type MaintenanceContext = Pick<AppContext, 'clock' | 'log' | 'metrics' | 'config'> &
  Pick<WebhookAppOptions, 'requestSync' | 'store'>;

/** Applies ready pending decisions and prunes old refusals (one transaction); returns what it did. */
export async function runInboxMaintenance(
  ctx: MaintenanceContext,
): Promise<{ applied: number; pruned: number }> {
  const now = ctx.clock.now();
  const { effects, pruned } = await ctx.store.maintain(isoAt(now), isoAt(now - REJECTION_RETENTION_MS));
  reportDecisionEffects(ctx, effects);
  if (effects.length > 0 || pruned > 0) {
    ctx.log.info({ event: 'webhook.maintenance', applied: effects.length, pruned }, 'inbox maintenance');
  }
  return { applied: effects.length, pruned };
}

/** Reads undecided events again with the configured vocabulary (at start-up); returns how many now decide. */
export async function rereadAtStart(ctx: MaintenanceContext): Promise<number> {
  const cfg = ctx.config.webhook;
  const vocabulary = compileVocabulary(cfg.decisions);
  const nowIso = isoAt(ctx.clock.now());
  const { resolved, effects } = await ctx.store.rereadUndecided(cfg.fields, vocabulary, nowIso);
  reportDecisionEffects(ctx, effects);
  if (resolved > 0) {
    ctx.log.info(
      { event: 'webhook.undecided.reread', resolved, applied: effects.length },
      'undecided webhooks read again with the current webhook.decisions',
    );
  }
  return resolved;
}

/** The component, plus where it listens once started. */
export interface WebhookComponent extends Component {
  /** The bound address once started (the real port when `listen` asked for port 0). */
  address(): { host: string; port: number; url: string } | undefined;
}

/** The webhook listener component. */
export function createWebhookComponent(ctx: AppContext, options: WebhookComponentOptions): WebhookComponent {
  const listeners = options.listeners ?? new Map<string, string>();
  let listener: HttpListener | undefined;
  let timer: NodeJS.Timeout | undefined;
  let bound: { host: string; port: number; url: string } | undefined;

  let maintaining: Promise<void> | undefined;
  const maintain = (): Promise<void> => {
    // A run still going (a slow database) is not joined by another.
    maintaining ??= runInboxMaintenance({ ...ctx, requestSync: options.requestSync, store: options.store })
      .then(
        () => undefined,
        (err: unknown) => {
          ctx.log.warn(
            { event: 'webhook.maintenance_failed', error: errorMessage(err) },
            'inbox maintenance failed',
          );
        },
      )
      .finally(() => {
        maintaining = undefined;
      });
    return maintaining;
  };

  return {
    name: 'webhook-listener',
    address: () => bound,
    async start() {
      const cfg = ctx.config.webhook;
      let app: ReturnType<typeof createWebhookApp>;
      try {
        app = createWebhookApp(ctx, options);
      } catch (err) {
        throw new ConfigError([errorMessage(err)]);
      }
      if (cfg.scheme === 'none') {
        ctx.log.warn(
          { event: 'webhook.unsigned', listen: cfg.listen },
          'webhook.scheme is "none": webhooks are NOT authenticated; anyone who reaches the listener can decide operations',
        );
      }
      listener = await startHttpListener(app.fetch, cfg.listen, 'webhook.listen', (err) =>
        ctx.log.error({ event: 'webhook.server_error', error: errorMessage(err) }, 'webhook server error'),
      );
      bound = { host: listener.host, port: listener.port, url: `${listener.url}${WEBHOOK_PATH}` };
      listeners.set('webhook-listener', bound.url);
      try {
        await rereadAtStart({ ...ctx, requestSync: options.requestSync, store: options.store });
      } catch (err) {
        ctx.log.warn(
          { event: 'webhook.reread_failed', error: errorMessage(err) },
          'could not read undecided webhooks again',
        );
      }
      await maintain();
      timer = setInterval(() => void maintain(), options.maintenanceMs ?? 60_000);
      timer.unref();
      ctx.log.info(
        { event: 'webhook.listening', listen: `${listener.host}:${listener.port}`, scheme: cfg.scheme },
        'webhook listener started',
      );
    },
    async stop() {
      if (timer) clearInterval(timer);
      timer = undefined;
      await maintaining;
      const current = listener;
      listener = undefined;
      listeners.delete('webhook-listener');
      if (!current) return;
      await current.close(options.stopTimeoutMs ?? 5_000);
      ctx.log.info({ event: 'webhook.stopped' }, 'webhook listener stopped');
    },
  };
}
