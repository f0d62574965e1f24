import { createHmac, createSecretKey, type KeyObject } from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import type { Readable } from 'node:stream';
import { type Got, got, type Response } from 'got';
import { linkedSignal } from '../linkedSignal.js';
import { parseRetryAfter } from '../operator/errors.js';
import { scrubText } from '../redact.js';
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

/**
 * POSTs signed events to subscribers. Every got timeout is set and got never retries (the
 * dispatcher owns retries). The answer's body is streamed, never kept: read up to
 * {@link ANSWER_READ_LIMIT}, then the request is destroyed, so a subscriber answering 1 GiB costs
 * a chunk of memory and its socket, not a 1 GiB buffer.
 */
export class SubscriberSender {
  private readonly got: Got;
  private readonly agents = {
    http: new http.Agent({ keepAlive: true, maxSockets: 64 }),
    https: new https.Agent({ keepAlive: true, maxSockets: 64 }),
  };
  private readonly keys = new Map<string, KeyObject>();

  constructor(t: SendTimeouts) {
    this.got = got.extend({
      agent: this.agents,
      retry: { limit: 0 },
      throwHttpErrors: false,
      followRedirect: false,
      timeout: {
        lookup: t.connectTimeoutMs,
        connect: t.connectTimeoutMs,
        secureConnect: t.connectTimeoutMs,
        socket: t.timeoutMs,
        send: t.timeoutMs,
        response: t.timeoutMs,
        request: t.timeoutMs,
      },
      headers: { 'user-agent': 'vcu-sync', 'content-type': 'application/json' },
    });
  }

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
    const linked = linkedSignal(signal);
    const request = this.got.stream.post(sub.url, {
      body: delivery.body,
      headers: this.headers(sub, delivery.webhookId, delivery.body, nowMs),
      ...(linked.signal ? { signal: linked.signal } : {}),
    });
    // An error after the answer was judged (a timeout while its body is dropped) has nobody to
    // hear it: without a listener it would be thrown as an uncaught 'error' event.
    request.on('error', () => {});
    try {
      const response = await answerOf(request);
      const retryAfter = response.headers['retry-after'];
      const outcome: DeliveryOutcome = {
        kind: 'answered',
        status: response.statusCode,
        retryAfterMs: parseRetryAfter(Array.isArray(retryAfter) ? retryAfter[0] : retryAfter, nowMs),
      };
      // The status is the answer: a body cut off or timed out after it does not change it.
      await readAtMost(request, ANSWER_READ_LIMIT);
      return outcome;
    } catch (err) {
      const e = err as { code?: string; name?: string; message?: string };
      const what =
        e.name === 'TimeoutError' || e.code === 'ETIMEDOUT' ? 'timed out' : (e.code ?? e.name ?? 'failed');
      // Only the error's kind: a message may quote the URL, which may carry a token.
      return { kind: 'error', error: scrubText(`request ${what}`) };
    } finally {
      linked.unlink();
      request.destroy();
    }
  }

  close(): void {
    this.agents.http.destroy();
    this.agents.https.destroy();
  }
}

/** The answer's status line and headers, or the request's error (refused, timed out, aborted). */
function answerOf(request: Readable & { once(event: 'response', fn: (r: Response) => void): unknown }) {
  return new Promise<Response>((resolve, reject) => {
    request.once('response', resolve);
    request.once('error', reject);
  });
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
