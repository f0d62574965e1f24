import { createHmac, createSecretKey, type KeyObject } from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import type { Readable } from 'node:stream';
import { scrubText } from '../common/redact.js';
import { type HttpAnswer, sendRequest } from '../http/httpRequest.js';
import { parseRetryAfter } from '../operator/operatorErrors.js';
import type { DeliveryOutcome } from './nextStep.js';
import type { Subscriber } from './subscribers.js';

/** Timeouts of a subscriber request, ms. */
export interface SendTimeouts {
  timeoutMs: number;
  connectTimeoutMs: number;
}

/**
 * Bytes of a subscriber's answer read before the rest is dropped. Only the status and Retry-After
 * are used; an answer this small is read to its end so its keep-alive socket is reused.
 */
export const ANSWER_READ_LIMIT = 64 * 1024;

/** Sent with every delivery beside the signature's; accept-encoding as the operator's requests send it. */
const SEND_HEADERS = {
  'user-agent': 'vcu-sync',
  'content-type': 'application/json',
  'accept-encoding': 'gzip, deflate, br',
} as const;

/**
 * POSTs signed events to subscribers, through node:http (src/http/httpRequest.ts): a connect bound, one
 * bound on the whole exchange, no redirect followed, never a retry (the dispatcher owns retries).
 * The answer's body is streamed, never kept: read up to {@link ANSWER_READ_LIMIT}, then dropped
 * with its socket, so a subscriber answering 1 GiB costs a chunk of memory and its socket, not a
 * 1 GiB buffer.
 */
export class SubscriberSender {
  private readonly agents = {
    http: new http.Agent({ keepAlive: true, maxSockets: 64 }),
    https: new https.Agent({ keepAlive: true, maxSockets: 64 }),
  };
  private readonly keys = new Map<string, KeyObject>();

  constructor(private readonly timeouts: SendTimeouts) {}

  /**
   * The Standard Webhooks headers for one body at `nowMs`: `v1,` and the base64 HMAC-SHA256 of
   * "id.timestamp.body" under the secret's base64 key, exactly what the `standardwebhooks`
   * library's `sign` gives (a test holds the two together), with node's native HMAC: the library's
   * pure-JS one cost a fifth of the delivery rate.
   */
  headers(sub: Subscriber, webhookId: string, body: string, nowMs: number): Record<string, string> {
    let key = this.keys.get(sub.key);
    if (!key) {
      // A KeyObject made once: HMAC from a raw Buffer key costs five times as much per call.
      key = createSecretKey(Buffer.from(sub.secret.replace(/^whsec_/, ''), 'base64'));
      this.keys.set(sub.key, key);
    }
    const timestamp = String(Math.floor(nowMs / 1000));
    const signature = createHmac('sha256', key).update(`${webhookId}.${timestamp}.${body}`).digest('base64');
    return {
      'webhook-id': webhookId,
      'webhook-timestamp': timestamp,
      'webhook-signature': `v1,${signature}`,
    };
  }

  /** One attempt; never throws. */
  async send(
    sub: Subscriber,
    delivery: { webhookId: string; body: string },
    nowMs: number,
    signal: AbortSignal,
  ): Promise<DeliveryOutcome> {
    let answer: HttpAnswer | undefined;
    try {
      answer = await sendRequest({
        method: 'POST',
        url: sub.url,
        body: delivery.body,
        headers: { ...SEND_HEADERS, ...this.headers(sub, delivery.webhookId, delivery.body, nowMs) },
        agents: this.agents,
        connectTimeoutMs: this.timeouts.connectTimeoutMs,
        timeout: { kind: 'whole', ms: this.timeouts.timeoutMs },
        signal,
      });
      const retryAfter = answer.response.headers['retry-after'];
      const outcome: DeliveryOutcome = {
        kind: 'answered',
        status: answer.response.statusCode ?? 0,
        retryAfterMs: parseRetryAfter(Array.isArray(retryAfter) ? retryAfter[0] : retryAfter, nowMs),
      };
      // The status is the answer: a body cut off or timed out after it does not change it. One
      // longer than the limit is dropped with its socket (readAtMost destroys what it leaves).
      await readAtMost(answer.body, ANSWER_READ_LIMIT);
      return outcome;
    } catch (err) {
      const e = err as { code?: string; name?: string; message?: string };
      const what =
        e.name === 'TimeoutError' || e.code === 'ETIMEDOUT' ? 'timed out' : (e.code ?? e.name ?? 'failed');
      // Only the error's kind: a message may quote the URL, which may carry a token.
      return { kind: 'error', error: scrubText(`request ${what}`) };
    } finally {
      answer?.done();
    }
  }

  close(): void {
    this.agents.http.destroy();
    this.agents.https.destroy();
  }
}

/**
 * Reads and drops the body up to `limit` bytes: true when it ended within the limit, false when it
 * was longer (or failed). Leaving the loop early destroys the stream, so the rest is never read.
 */
export async function readAtMost(body: Readable, limit: number): Promise<boolean> {
  let seen = 0;
  try {
    for await (const chunk of body) {
      seen += (chunk as Buffer).byteLength;
      if (seen > limit) return false;
    }
    return true;
  } catch {
    return false;
  }
}
