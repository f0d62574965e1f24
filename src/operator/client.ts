import http from 'node:http';
import https from 'node:https';
import { type Got, got, type Request } from 'got';
import { type Clock, systemClock } from '../clock.js';
import { errorForNetwork, errorForStatus, OperatorError } from './errors.js';
import { type ListBody, readListBody } from './listBody.js';
import { RateLimiter } from './rateLimit.js';

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
  /** Requests per second, all callers together (default: 10). */
  ratePerSecond?: number;
  /** List bodies larger than this are streamed instead of parsed at once, bytes (default: 2 MiB). */
  bufferLimitBytes?: number;
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
  /** The body as text, stored with the outbox row. */
  body: string;
  durationMs: number;
}

/** The operator client: auth, timeouts, a shared rate limit, keep-alive, and classified errors. */
export class OperatorClient {
  private readonly got: Got;
  private readonly limiter: RateLimiter;
  private readonly base: string;
  private readonly clock: Clock;
  private readonly agents: { http: http.Agent; https: https.Agent };

  constructor(private readonly options: OperatorClientOptions) {
    this.base = options.baseUrl.replace(/\/+$/, '');
    this.clock = options.clock ?? systemClock;
    this.limiter = new RateLimiter(options.ratePerSecond ?? 10, undefined, this.clock);
    const maxSockets = options.maxSockets ?? 16;
    this.agents = {
      http: new http.Agent({ keepAlive: true, maxSockets }),
      https: new https.Agent({ keepAlive: true, maxSockets }),
    };
    const timeoutMs = options.timeoutMs ?? 30_000;
    this.got = got.extend({
      agent: this.agents,
      // The loops own retries: got must never resend, least of all a POST.
      retry: { limit: 0 },
      throwHttpErrors: false,
      followRedirect: false,
      timeout: {
        lookup: options.connectTimeoutMs ?? 5_000,
        connect: options.connectTimeoutMs ?? 5_000,
        secureConnect: options.connectTimeoutMs ?? 5_000,
        socket: timeoutMs,
        send: timeoutMs,
        response: timeoutMs,
      },
      headers: { 'user-agent': 'vcu-sync', accept: 'application/json' },
    });
  }

  private headers(withAuth: boolean): Record<string, string> {
    const key = this.options.apiKey;
    if (!withAuth || !key) return {};
    return (this.options.auth ?? 'apikey') === 'bearer'
      ? { authorization: `Bearer ${key}` }
      : { apikey: key };
  }

  /** Why a request with(out) auth goes out without a key; undefined when it carries one. */
  private keyNotSent(withAuth: boolean): string | undefined {
    if (!this.options.apiKey) return 'no API key was configured';
    return withAuth ? undefined : 'operator.auth_on_notify = false';
  }

  private url(path: string, query: ListQuery = {}): string {
    const params = new URLSearchParams();
    for (const [k, v] of Object.entries(query)) if (v !== undefined) params.set(k, String(v));
    const qs = params.toString();
    return `${this.base}${path}${qs ? `?${qs}` : ''}`;
  }

  private report(operation: string, status: number | 'error', started: number): number {
    const durationMs = this.clock.now() - started;
    this.options.onResponse?.({ operation, status, durationMs });
    return durationMs;
  }

  /** Reads the text of a non-2xx answer (bounded) and throws it as a classified error. */
  private async failFromStream(
    stream: Request,
    status: number,
    retryAfter: string | undefined,
    keyNotSent: string | undefined,
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
    throw errorForStatus(status, text, retryAfter, this.clock.now(), keyNotSent);
  }

  /** GETs one page (or the whole body) of a list endpoint. */
  async list(
    operation: string,
    path: string,
    query: ListQuery = {},
    request: RequestOptions = {},
  ): Promise<ListBody> {
    await this.limiter.acquire();
    const started = this.clock.now();
    const stream = this.got.stream(this.url(path, query), {
      headers: this.headers(true),
      ...(request.signal ? { signal: request.signal } : {}),
    });
    let response: http.IncomingMessage;
    try {
      response = await new Promise<http.IncomingMessage>((resolve, reject) => {
        stream.once('response', resolve);
        stream.once('error', reject);
      });
    } catch (err) {
      this.report(operation, 'error', started);
      throw errorForNetwork(err);
    }
    const status = response.statusCode ?? 0;
    this.report(operation, status, started);
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
    return readListBody(stream, this.options.bufferLimitBytes ?? 2 * 1024 * 1024);
  }

  /** GETs one object (a Marketplace Data read); null when the operator answers 404. */
  async getOne(operation: string, path: string, request: RequestOptions = {}): Promise<unknown | null> {
    await this.limiter.acquire();
    const started = this.clock.now();
    const response = await this.send(operation, started, () =>
      this.got(this.url(path), {
        headers: this.headers(true),
        timeout: { request: this.options.timeoutMs ?? 30_000 },
        ...(request.signal ? { signal: request.signal } : {}),
      }),
    );
    if (response.statusCode === 404) return null;
    this.throwUnlessOk(response, this.keyNotSent(true));
    try {
      return JSON.parse(response.body) as unknown;
    } catch {
      throw new OperatorError(
        'invalid-response',
        'operator answered a body that is not valid JSON',
        response.statusCode,
      );
    }
  }

  /** POSTs a notification; resolves on any 2xx, throws a classified error otherwise. Never retries. */
  async notify(path: string, body: string, request: RequestOptions = {}): Promise<NotifyResult> {
    await this.limiter.acquire();
    const started = this.clock.now();
    const response = await this.send('notify', started, () =>
      this.got.post(this.url(path), {
        body,
        headers: { ...this.headers(this.options.authOnNotify ?? true), 'content-type': 'application/json' },
        timeout: { request: this.options.timeoutMs ?? 30_000 },
        ...(request.signal ? { signal: request.signal } : {}),
      }),
    );
    const durationMs = this.clock.now() - started;
    const mask = request.maskBody;
    this.throwUnlessOk(
      mask
        ? { statusCode: response.statusCode, headers: response.headers, body: mask(response.body) }
        : response,
      this.keyNotSent(this.options.authOnNotify ?? true),
    );
    return { status: response.statusCode, body: response.body, durationMs };
  }

  /** Throws the classified error of a non-2xx answer. */
  private throwUnlessOk(
    response: { statusCode: number; body: string; headers: http.IncomingHttpHeaders },
    keyNotSent: string | undefined,
  ): void {
    if (response.statusCode >= 200 && response.statusCode < 300) return;
    throw errorForStatus(
      response.statusCode,
      response.body,
      header(response, 'retry-after'),
      this.clock.now(),
      keyNotSent,
    );
  }

  private async send<T extends { statusCode: number }>(
    operation: string,
    started: number,
    call: () => Promise<T>,
  ): Promise<T> {
    try {
      const response = await call();
      this.report(operation, response.statusCode, started);
      return response;
    } catch (err) {
      this.report(operation, 'error', started);
      throw errorForNetwork(err);
    }
  }

  /** Closes kept-alive sockets. */
  close(): void {
    this.agents.http.destroy();
    this.agents.https.destroy();
  }
}

function header(response: { headers: http.IncomingHttpHeaders }, name: string): string | undefined {
  const value = response.headers[name];
  return Array.isArray(value) ? value[0] : value;
}
