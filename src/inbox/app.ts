/**
 * The webhook endpoint, `POST /webhooks/operator`, as a Hono app (served by `listener.ts`, or
 * called directly by tests). Order of checks: declared size (413), content type (415), bounded body
 * (413), signature (401), JSON object (400); then record first, act second, answer 2xx only after
 * the commit. Nothing unverified touches the events table.
 */
import { Hono } from 'hono';
import { isoAt } from '../common/clock.js';
import { errorMessage } from '../common/errors.js';
import type { RequestSync } from '../common/syncRequests.js';
import type { AppContext } from '../context.js';
import {
  declaredTooLarge,
  foreignCharset,
  foreignCharsetMessage,
  isJsonContentType,
  readRequestBody,
} from '../http/httpBody.js';
import { bodyHash, type RecordResult } from './correlate.js';
import { requestHeaders } from './headers.js';
import type { InboxStore } from './inboxStore.js';
import { interpretPayload } from './interpret.js';
import { reportDecisionEffects } from './report.js';
import { createVerifier } from './verifySignature.js';
import { compileVocabulary } from './vocabulary.js';

/** The path the operator posts to. */
export const WEBHOOK_PATH = '/webhooks/operator';

/** Options of {@link createWebhookApp}. */
export interface WebhookAppOptions {
  /** Header with the sender's message id for the hmac, token and none schemes (default: "webhook-id"). */
  idHeader?: string;
  /** Refusals stored in webhook_rejections per minute; beyond it they are only counted, so a flood cannot fill the disk (default: 60). */
  rejectionRowsPerMinute?: number;
  /** Asks the mirror for a custody sync after a deposit (default: none; daemon.ts wires the scheduler's). */
  requestSync?: RequestSync | undefined;
  /** Where events are recorded and applied. */
  store: InboxStore;
}

/** The Hono app plus what the component needs from it. */
export type WebhookApp = Hono;

type Refusal = 400 | 401 | 413 | 415;

const REFUSAL_OUTCOME: Record<Refusal, string> = {
  400: 'rejected_malformed',
  401: 'rejected_signature',
  413: 'rejected_too_large',
  415: 'rejected_content_type',
};

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** Parses the body as a JSON object, or says why not. Pure. */
export function parseJsonObject(
  bytes: Uint8Array,
): { ok: true; value: Record<string, unknown>; text: string } | { ok: false; reason: string } {
  let text: string;
  try {
    text = utf8.decode(bytes);
  } catch {
    return { ok: false, reason: 'body is not valid UTF-8' };
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { ok: false, reason: 'body is not valid JSON' };
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return { ok: false, reason: 'body must be a JSON object' };
  }
  return { ok: true, value: value as Record<string, unknown>, text };
}

/** The wait a database fault asks of its clients (its `retryAfterSeconds`), else 5 s. */
function retryAfterOf(err: unknown): number {
  const seconds = (err as { retryAfterSeconds?: unknown } | null)?.retryAfterSeconds;
  return typeof seconds === 'number' ? seconds : 5;
}

/** Counts stored refusals per minute so a flood of forgeries cannot grow the table without bound. */
class RefusalBudget {
  private windowStart = 0;
  private used = 0;
  constructor(private readonly perMinute: number) {}
  take(nowMs: number): boolean {
    if (nowMs - this.windowStart >= 60_000 || nowMs < this.windowStart) {
      this.windowStart = nowMs;
      this.used = 0;
    }
    if (this.used >= this.perMinute) return false;
    this.used += 1;
    return true;
  }
}

/**
 * Builds the webhook app over its store. Throws an Error naming the problem when the configured
 * scheme needs secrets and none are set.
 */
export function createWebhookApp(ctx: AppContext, options: WebhookAppOptions): WebhookApp {
  const cfg = ctx.config.webhook;
  const verify = createVerifier({
    scheme: cfg.scheme,
    secrets: cfg.secrets,
    toleranceSeconds: cfg.tolerance_seconds,
    hmacHeader: cfg.hmac_header,
    hmacEncoding: cfg.hmac_encoding,
    hmacTimestampHeader: cfg.hmac_timestamp_header,
    tokenHeader: cfg.token_header,
    idHeader: options.idHeader ?? ctx.config.webhook.id_header,
  });
  const { store } = options;
  const budget = new RefusalBudget(options.rejectionRowsPerMinute ?? 60);
  const limit = cfg.max_body_bytes;
  const fields = cfg.fields;
  const vocabulary = compileVocabulary(cfg.decisions);
  const app = new Hono();

  const refuse = async (status: Refusal, reason: string, nowMs: number, close = false): Promise<Response> => {
    ctx.metrics.webhookEvents.inc({ outcome: REFUSAL_OUTCOME[status] });
    // Under a flood of forgeries only the first refusals per minute reach the table and the journal.
    if (budget.take(nowMs)) {
      try {
        await store.recordRejection(isoAt(nowMs), status, reason);
      } catch (err) {
        ctx.log.warn(
          { event: 'webhook.rejection.store_failed', error: errorMessage(err) },
          'could not record a refused webhook',
        );
      }
      ctx.log.warn({ event: 'webhook.refused', status, reason }, 'webhook refused');
    }
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    // An unread oversized body would otherwise be drained from the socket after we answer.
    if (close) headers.connection = 'close';
    return new Response(JSON.stringify({ error: reason }), { status, headers });
  };

  app.post(WEBHOOK_PATH, async (c) => {
    const nowMs = ctx.clock.now();
    const header = requestHeaders(c);
    if (declaredTooLarge(header('content-length'), limit)) {
      return refuse(413, `body larger than ${limit} bytes`, nowMs, true);
    }
    const contentType = header('content-type');
    if (!isJsonContentType(contentType)) {
      return refuse(415, 'content type must be application/json', nowMs);
    }
    const charset = foreignCharset(contentType);
    if (charset !== null) return refuse(415, foreignCharsetMessage(charset), nowMs);
    const body = await readRequestBody(c, limit);
    if (!body.ok) return refuse(body.status, body.reason, nowMs, true);

    const verdict = verify(header, body.bytes, nowMs);
    if (!verdict.ok) return refuse(401, verdict.reason, nowMs);

    const parsed = parseJsonObject(body.bytes);
    if (!parsed.ok) return refuse(400, parsed.reason, nowMs);

    const meaning = interpretPayload(parsed.value, fields, vocabulary);
    let result: RecordResult;
    try {
      // Masked (personal data the operator quoted), recorded and applied by the store, one commit.
      result = await store.receive({
        webhookId: verdict.webhookId,
        receivedAt: isoAt(nowMs),
        body: parsed.value,
        // The hash is of the bytes received, not of the masked text stored: replays compare as sent.
        bodyHash: bodyHash(body.bytes),
        meaning,
      });
    } catch (err) {
      // Not stored, so not acknowledged: the operator retries and nothing is lost.
      ctx.metrics.webhookEvents.inc({ outcome: 'store_failed' });
      ctx.log.error(
        { event: 'webhook.store_failed', error: errorMessage(err) },
        'could not store a webhook; answering 503',
      );
      return c.json({ error: 'could not store the event, retry later' }, 503, {
        'retry-after': String(retryAfterOf(err)),
      });
    }
    ctx.metrics.webhookEvents.inc({ outcome: result.replay ? 'replay' : result.outcome });
    reportDecisionEffects(
      { log: ctx.log, metrics: ctx.metrics, requestSync: options.requestSync },
      result.effects,
    );
    if (ctx.log.isLevelEnabled('debug')) {
      ctx.log.debug(
        {
          event: result.replay ? 'webhook.replay' : 'webhook.received',
          webhookId: verdict.webhookId,
          type: meaning.type,
          ref: meaning.ref,
          outcome: result.outcome,
          replay: result.replay,
        },
        result.replay ? 'webhook replayed (same id, same body); no effect' : 'webhook stored',
      );
    }
    return c.json({ received: true, outcome: result.outcome, replay: result.replay }, 200);
  });

  app.all(WEBHOOK_PATH, (c) => c.json({ error: 'method not allowed, use POST' }, 405, { allow: 'POST' }));
  app.notFound((c) => c.json({ error: 'not found' }, 404));
  app.onError((err, c) => {
    ctx.log.error({ event: 'webhook.handler_failed', error: errorMessage(err) }, 'webhook handler failed');
    return c.json({ error: 'internal error' }, 500);
  });
  return app;
}
