import http from 'node:http';
import https from 'node:https';
import type { Readable } from 'node:stream';
import { type Clock, systemClock } from '../common/clock.js';
import { type HttpAnswer, sendRequest } from '../http/httpRequest.js';
import { overLimits, type RecordLimits, tooLarge, UnreadableRecord } from './limits.js';
import { type ListBody, readBounded, readListBody } from './listBody.js';
import { errorForNetwork, errorForStatus, OperatorError, parseRetryAfter } from './operatorErrors.js';
import { type RateEvent, RateLimiter } from './rateLimit.js';

/** Sent with every request: compressed answers are welcome (they are inflated before any limit counts). */
const REQUEST_HEADERS = {
  'user-agent': 'vcu-sync',
  accept: 'application/json',
  'accept-encoding': 'gzip, deflate, br',
} as const;

/** Everything the client needs to reach the operator. */
export interface OperatorClientOptions {
  /** The operator's `{base_url}` (no default). */
  baseUrl: string;
  /** The API key (default: none, no auth header is sent). */
  apiKey?: string | undefined;
  /** `apikey` header or `Authorization: Bearer` (default: "apikey"). */
  auth?: 'apikey' | 'bearer';
  /** Send the key on /notify too (default: true). */
  authOnNotify?: boolean;
  /** Whole-request timeout for single reads and /notify; idle timeout for list bodies, ms (default: 30000). */
  timeoutMs?: number;
  /** Connect timeout, ms (default: 5000). */
  connectTimeoutMs?: number;
  /** Most requests per second, all callers together: the adaptive rate's ceiling and start (default: 10). */
  ratePerSecond?: number;
  /** Least requests per second 429s may bring the rate to (default: 0.5, at most ratePerSecond). */
  minRatePerSecond?: number;
  /** Requests per second the rate climbs by per second of successes (default: 1). */
  rateIncreasePerSecond?: number;
  /**
   * The rate budget shared with the other threads of this daemon (`newRateBudget()`): their clients
   * and this one keep to one rate together (default: a budget of this client's own).
   */
  rateBudget?: SharedArrayBuffer | undefined;
  /** Told the new rate whenever a 429 or a success changes it, for metrics and logs (default: none). */
  onRate?: (ratePerSecond: number, event: RateEvent) => void;
  /** How the rate limit waits; tests pass one that moves their clock (default: setTimeout). */
  sleep?: (ms: number) => Promise<void>;
  /** List bodies larger than this are streamed instead of parsed at once, bytes (default: 2 MiB). */
  bufferLimitBytes?: number;
  /** Largest record, decompressed: a Marketplace Data answer or one list element, bytes (default: 1 MiB). */
  maxRecordBytes?: number;
  /** Deepest nesting of one record (default: 64). */
  maxDepth?: number;
  /** Most of a /notify answer that is read and kept, decompressed bytes (default: 1 MiB). */
  maxResponseBytes?: number;
  /** Most concurrent sockets (default: 16). */
  maxSockets?: number;
  /** Called after every request, for metrics (default: none). */
  onResponse?: (event: { operation: string; status: number | 'error'; durationMs: number }) => void;
  clock?: Clock;
}

/** Query parameters of the list endpoints. */
export type ListQuery = Record<string, string | number | undefined>;

/** Per-request options. */
export interface RequestOptions {
  /** Cancels the request (a graceful stop that will not wait for it) (default: none). */
  signal?: AbortSignal | undefined;
  /**
   * Masks an error body before its words become the error message (and so before any cut), so
   * what the operator echoed of the request is not quoted (default: none).
   */
  maskBody?: ((body: string) => string) | undefined;
}

/** The operator's answer to an accepted /notify. */
export interface NotifyResult {
  status: number;
  /** The body as text, stored with the outbox row; cut at the limit, with a marker saying so. */
  body: string;
  durationMs: number;
}

/** The operator client: auth, timeouts, a shared rate limit, keep-alive, and classified errors. */
export class OperatorClient {
  private readonly limiter: RateLimiter;
  private readonly base: string;
  private readonly clock: Clock;
  private readonly agents: { http: http.Agent; https: https.Agent };
  private readonly limits: RecordLimits;

  constructor(private readonly options: OperatorClientOptions) {
    this.base = options.baseUrl.replace(/\/+$/, '');
    this.clock = options.clock ?? systemClock;
    this.limits = {
      maxRecordBytes: options.maxRecordBytes ?? 1024 * 1024,
      maxDepth: options.maxDepth ?? 64,
    };
    this.limiter = new RateLimiter({
      config: {
        ceiling: options.ratePerSecond ?? 10,
        floor: options.minRatePerSecond ?? 0.5,
        increasePerSecond: options.rateIncreasePerSecond ?? 1,
      },
      clock: this.clock,
      ...(options.rateBudget ? { budget: options.rateBudget } : {}),
      ...(options.sleep ? { sleep: options.sleep } : {}),
      ...(options.onRate ? { onChange: options.onRate } : {}),
    });
    const maxSockets = options.maxSockets ?? 16;
    this.agents = {
      http: new http.Agent({ keepAlive: true, maxSockets }),
      https: new https.Agent({ keepAlive: true, maxSockets }),
    };
  }

  private headers(withAuth: boolean): Record<string, string> {
    const key = this.options.apiKey;
    if (!withAuth || !key) return {};
    return (this.options.auth ?? 'apikey') === 'bearer'
      ? { authorization: `Bearer ${key}` }
      : { apikey: key };
  }

  private url(path: string, query: ListQuery = {}): string {
    const params = new URLSearchParams();
    for (const [k, v] of Object.entries(query)) if (v !== undefined) params.set(k, String(v));
    const qs = params.toString();
    return `${this.base}${path}${qs ? `?${qs}` : ''}`;
  }

  /** The adaptive rate now and its ceiling, requests per second. */
  get rate(): { current: number; ceiling: number } {
    return { current: this.limiter.rate, ceiling: this.limiter.ceiling };
  }

  /** Feeds an answer's status into the adaptive rate: 429 cuts it, 2xx raises it, others say nothing. */
  private rateFeedback(status: number, sentAt: number, retryAfter: string | undefined): void {
    if (status === 429) {
      const at = this.clock.now();
      this.limiter.feedback({ kind: 'limited', sentAt, at, retryAfterMs: parseRetryAfter(retryAfter, at) });
    } else if (status >= 200 && status < 300) this.limiter.feedback({ kind: 'ok', sentAt });
  }

  private report(operation: string, status: number | 'error', started: number): number {
    const durationMs = this.clock.now() - started;
    this.options.onResponse?.({ operation, status, durationMs });
    return durationMs;
  }

  /** Why a request with(out) auth goes out without a key; undefined when it carries one. */
  private keyNotSent(withAuth: boolean): string | undefined {
    if (!this.options.apiKey) return 'no API key was configured';
    return withAuth ? undefined : 'operator.auth_on_notify = false';
  }

  /** Reads the text of a non-2xx answer (bounded) and throws it as a classified error. */
  private async failFromStream(
    stream: Readable,
    status: number,
    retryAfter: string | undefined,
    keyNotSent: string | undefined,
    mask?: (body: string) => string,
  ): Promise<never> {
    let text = '';
    try {
      for await (const chunk of stream) {
        text += String(chunk);
        if (text.length > 4096) break;
      }
    } catch {
      // The error status is what matters; a broken error body changes nothing.
    }
    stream.destroy();
    throw errorForStatus(status, mask ? mask(text) : text, retryAfter, this.clock.now(), keyNotSent);
  }

  /**
   * Sends a request and waits for the answer's head, after the shared rate limit; the body is then
   * read through a bounded reader (inflated first, so limits count decompressed bytes). Single
   * reads and /notify are bounded as a whole; list bodies, which may be large, only by idleness.
   */
  private async open(
    operation: string,
    init: {
      method: 'GET' | 'POST';
      url: string;
      body?: string;
      headers: Record<string, string>;
      whole: boolean;
    },
    request: RequestOptions,
  ): Promise<HttpAnswer & { started: number }> {
    await this.limiter.acquire(request.signal);
    const started = this.clock.now();
    const timeoutMs = this.options.timeoutMs ?? 30_000;
    let answer: HttpAnswer;
    try {
      answer = await sendRequest({
        method: init.method,
        url: init.url,
        body: init.body,
        headers: { ...REQUEST_HEADERS, ...init.headers },
        agents: this.agents,
        connectTimeoutMs: this.options.connectTimeoutMs ?? 5_000,
        timeout: { kind: init.whole ? 'whole' : 'idle', ms: timeoutMs },
        signal: request.signal,
      });
    } catch (err) {
      this.report(operation, 'error', started);
      throw errorForNetwork(err);
    }
    const status = answer.response.statusCode ?? 0;
    this.report(operation, status, started);
    this.rateFeedback(status, started, header(answer.response, 'retry-after'));
    return { ...answer, started };
  }

  /** GETs one page (or the whole body) of a list endpoint. */
  async list(
    operation: string,
    path: string,
    query: ListQuery = {},
    request: RequestOptions = {},
  ): Promise<ListBody> {
    const { body: stream, response } = await this.open(
      operation,
      { method: 'GET', url: this.url(path, query), headers: this.headers(true), whole: false },
      request,
    );
    const status = response.statusCode ?? 0;
    if (status < 200 || status >= 300)
      await this.failFromStream(stream, status, header(response, 'retry-after'), this.keyNotSent(true));
    const type = header(response, 'content-type') ?? '';
    if (type.includes('text/html')) {
      stream.destroy();
      throw new OperatorError(
        'invalid-response',
        'operator answered an HTML page where a JSON array was expected',
        status,
      );
    }
    return readListBody(stream, this.options.bufferLimitBytes ?? 2 * 1024 * 1024, this.limits);
  }

  /**
   * GETs one object (a Marketplace Data read); null when the operator answers 404. A record past
   * the limits (size, nesting) is answered as an {@link UnreadableRecord}, read no further than the
   * size limit: the caller quarantines it.
   */
  async getOne(
    operation: string,
    path: string,
    request: RequestOptions = {},
  ): Promise<unknown | UnreadableRecord | null> {
    const { body: stream, response } = await this.open(
      operation,
      { method: 'GET', url: this.url(path), headers: this.headers(true), whole: true },
      request,
    );
    const status = response.statusCode ?? 0;
    if (status === 404) {
      stream.destroy();
      return null;
    }
    if (status < 200 || status >= 300)
      await this.failFromStream(stream, status, header(response, 'retry-after'), this.keyNotSent(true));
    const limit = this.limits.maxRecordBytes;
    const body = await this.readOrFail(stream, limit);
    if (body.truncated)
      return new UnreadableRecord(tooLarge(limit), body.bytes.subarray(0, 1024).toString('utf8'));
    const unreadable = overLimits(body.bytes, 0, this.limits);
    if (unreadable !== null)
      return new UnreadableRecord(unreadable, body.bytes.subarray(0, 1024).toString('utf8'));
    try {
      return JSON.parse(body.bytes.toString('utf8')) as unknown;
    } catch {
      throw new OperatorError('invalid-response', 'operator answered a body that is not valid JSON', status);
    }
  }

  /**
   * POSTs a notification; resolves on any 2xx, throws a classified error otherwise. Never retries.
   * At most `maxResponseBytes` of the answer are read: the rest is dropped and the text says so.
   */
  async notify(path: string, body: string, request: RequestOptions = {}): Promise<NotifyResult> {
    const answer = await this.open(
      'notify',
      {
        method: 'POST',
        url: this.url(path),
        body,
        headers: { ...this.headers(this.options.authOnNotify ?? true), 'content-type': 'application/json' },
        whole: true,
      },
      request,
    );
    const { response, started } = answer;
    const status = response.statusCode ?? 0;
    try {
      if (status < 200 || status >= 300)
        await this.failFromStream(
          answer.body,
          status,
          header(response, 'retry-after'),
          this.keyNotSent(this.options.authOnNotify ?? true),
          request.maskBody,
        );
      const limit = this.options.maxResponseBytes ?? 1024 * 1024;
      const read = await this.readOrFail(answer.body, limit);
      const text = read.bytes.toString('utf8');
      return {
        status,
        body: read.truncated ? `${text}${truncatedMarker(limit)}` : text,
        durationMs: this.clock.now() - started,
      };
    } finally {
      answer.done();
    }
  }

  /** {@link readBounded}, a broken or timed-out body classified as a network failure. */
  private async readOrFail(stream: Readable, limit: number) {
    try {
      return await readBounded(stream, limit);
    } catch (err) {
      throw errorForNetwork(err);
    }
  }

  /** Closes kept-alive sockets. */
  close(): void {
    this.agents.http.destroy();
    this.agents.https.destroy();
  }
}

/** Appended to a /notify answer cut at the limit. */
export function truncatedMarker(limit: number): string {
  return `…[truncated by vcu-sync: the answer was longer than operator.max_response_bytes (${limit} bytes)]`;
}

function header(response: { headers: http.IncomingHttpHeaders }, name: string): string | undefined {
  const value = response.headers[name];
  return Array.isArray(value) ? value[0] : value;
}
