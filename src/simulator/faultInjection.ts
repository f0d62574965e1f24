/**
 * Fault injection: a deterministic queue (`next(n, kind)`: the next n matching requests get this
 * fault, so tests never depend on chance or on time passing) and probabilistic rates (seeded, so a
 * benchmark or demo run is reproducible).
 */
import { Rng } from './prng.js';

export const FAULT_KINDS = [
  '500',
  '502',
  '503',
  '429',
  '401',
  'latency',
  'reset',
  'truncated',
  'html',
  'invalid-record',
  'drift',
  'ignore-offset',
  'echo',
] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

export function isFaultKind(s: unknown): s is FaultKind {
  return typeof s === 'string' && (FAULT_KINDS as readonly string[]).includes(s);
}

export interface FaultOptions {
  /** Only requests whose path starts with this get the fault (default: '/integration/v1/') */
  pathPrefix?: string;
  /** Only requests with this HTTP method (default: any) */
  method?: string;
  /** Seconds in the Retry-After header of a 429 (default: 1) */
  retryAfterSec?: number;
  /** Delay before answering, for `latency` (default: 200) */
  latencyMs?: number;
  /** Status of the `html` error page (default: 502) */
  htmlStatus?: 200 | 502;
  /** `short-body`: Content-Length promises more than is sent, then the socket closes; `cut-json`: a complete response whose JSON is cut (default: 'short-body') */
  truncateMode?: 'short-body' | 'cut-json';
  /** What `drift` does to records before the requested offset (default: 'remove') */
  driftOp?: 'insert' | 'remove';
  /** How many records `drift` inserts or removes (default: 1) */
  driftCount?: number;
  /** Field that `invalid-record` gives a wrong type (default: projectID / issuanceAmount / unitsQuantity) */
  corruptField?: string;
  /** The wrong value (default: 'abc' for ids, 'lots' otherwise) */
  corruptValue?: unknown;
  /** `401`: the message quotes the credentials the request offered (raw, base64, upper case, URL-encoded), as careless gateways do (default: false) */
  echoKey?: boolean;
  /** Status of the `echo` answer, whose error body quotes the request's personal fields and the whole body (default: 422) */
  echoStatus?: number;
}

export interface Fault extends FaultOptions {
  kind: FaultKind;
}

export interface FaultRates {
  /** Share of interface requests answered 500/502/503, chosen evenly (default: 0) */
  error?: number;
  /** Share answered 429 with Retry-After (default: 0) */
  rateLimit?: number;
  /** Share whose socket is destroyed without a response (default: 0) */
  reset?: number;
  /** Share whose body is cut short (default: 0) */
  truncated?: number;
  /** Share answered with an HTML error page (default: 0) */
  html?: number;
  /** Share of record-bearing reads with one wrongly typed record (default: 0) */
  invalidRecord?: number;
  /** Delay added to every interface request, in ms (default: 0) */
  latencyMs?: number;
  /** Retry-After seconds for probabilistic 429s (default: 1) */
  retryAfterSec?: number;
}

/** What the server knows about a request when choosing a fault. */
export interface FaultRequest {
  path: string;
  method: string;
  /** A GET of a public list (drift applies only to these). */
  isList: boolean;
  /** A GET that returns records (invalid-record applies only to these). */
  returnsRecords: boolean;
}

export interface InjectedFault {
  kind: FaultKind;
  method: string;
  path: string;
  at: string;
  /** What the fault did, e.g. the ids a drift removed or inserted. */
  detail?: Record<string, unknown>;
}

const DEFAULT_PREFIX = '/integration/v1/';

function applies(f: Fault, req: FaultRequest): boolean {
  if (!req.path.startsWith(f.pathPrefix ?? DEFAULT_PREFIX)) return false;
  if (f.method && f.method.toUpperCase() !== req.method.toUpperCase()) return false;
  if (f.kind === 'drift' || f.kind === 'ignore-offset') return req.isList;
  if (f.kind === 'invalid-record') return req.returnsRecords;
  // Only a request with a body has one to echo.
  if (f.kind === 'echo') return req.method.toUpperCase() === 'POST';
  return true;
}

export class FaultControl {
  private readonly queue: { fault: Fault; remaining: number }[] = [];
  private rng: Rng;
  rates: FaultRates;
  /** Every fault actually applied, in order: tests assert on it. */
  readonly injected: InjectedFault[] = [];

  constructor(rates: FaultRates = {}, seed = 1) {
    this.rates = { ...rates };
    this.rng = new Rng(seed ^ 0xfa017);
  }

  /** The next n requests matching `opts` (path prefix, method) get this fault. */
  next(n: number, kind: FaultKind, opts: FaultOptions = {}): void {
    if (!Number.isSafeInteger(n) || n < 1) throw new Error('fault count must be a positive integer');
    if (!isFaultKind(kind)) throw new Error(`unknown fault kind: ${String(kind)}`);
    this.queue.push({ fault: { ...opts, kind }, remaining: n });
  }

  /** Drops queued faults and resets rates to none. */
  clear(): void {
    this.queue.length = 0;
    this.rates = {};
  }

  setRates(rates: FaultRates): void {
    this.rates = { ...rates };
  }

  /** Queued faults with the number of requests each still applies to. */
  pending(): (Fault & { remaining: number })[] {
    return this.queue.map((q) => ({ ...q.fault, remaining: q.remaining }));
  }

  /** Chooses the fault for one request (queue first, then rates) and records it. */
  take(req: FaultRequest): Fault | undefined {
    const fault = this.fromQueue(req) ?? this.fromRates(req);
    if (fault)
      this.injected.push({
        kind: fault.kind,
        method: req.method,
        path: req.path,
        at: new Date().toISOString(),
      });
    return fault;
  }

  /** Attaches what the last injected fault did (handlers call it after acting). */
  noteLast(detail: Record<string, unknown>): void {
    const last = this.injected[this.injected.length - 1];
    if (last) last.detail = detail;
  }

  /** Constant latency added to every interface request by the rates (0 when none). */
  baseLatencyMs(path: string): number {
    return path.startsWith(DEFAULT_PREFIX) ? (this.rates.latencyMs ?? 0) : 0;
  }

  private fromQueue(req: FaultRequest): Fault | undefined {
    const i = this.queue.findIndex((q) => applies(q.fault, req));
    const q = this.queue[i];
    if (!q) return undefined;
    if (--q.remaining <= 0) this.queue.splice(i, 1);
    return q.fault;
  }

  private fromRates(req: FaultRequest): Fault | undefined {
    if (!req.path.startsWith(DEFAULT_PREFIX)) return undefined;
    const r = this.rates;
    const retryAfterSec = r.retryAfterSec ?? 1;
    if (r.error && this.rng.chance(r.error)) return { kind: this.rng.pick(['500', '502', '503'] as const) };
    if (r.rateLimit && this.rng.chance(r.rateLimit)) return { kind: '429', retryAfterSec };
    if (r.reset && this.rng.chance(r.reset)) return { kind: 'reset' };
    if (r.truncated && this.rng.chance(r.truncated)) return { kind: 'truncated' };
    if (r.html && this.rng.chance(r.html)) return { kind: 'html' };
    if (req.returnsRecords && r.invalidRecord && this.rng.chance(r.invalidRecord))
      return { kind: 'invalid-record' };
    return undefined;
  }
}
