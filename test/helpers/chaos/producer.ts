/**
 * The chaos harness's client: a fixed-rate producer POSTing new operations to the replicas' APIs in
 * turn, as a marketplace would. Fixed rate means ticks at absolute times (a late timer fires every
 * tick it missed at once), so a slow replica sees the same offered load as a fast one. Each tick is
 * one new ref; a request that fails without an answer the client can trust (no connection, a 5xx,
 * no answer within `hangMs`) is sent once more to the other replica, with the same ref and body (an
 * enqueue is idempotent by ref). A ref is acknowledged when a request for it was answered 2xx.
 */

/**
 * How one HTTP request of the producer ended; `shed` when the tick found the client's every slot
 * busy and sent nothing (the operation was never offered).
 */
export type RequestOutcome = number | 'network' | 'hung' | 'shed';

/** One request as sent, for the latency figures. */
export interface ProducerRequest {
  ref: string;
  /** Which replica's API (index into `apis`). */
  api: number;
  startedMs: number;
  ms: number;
  outcome: RequestOutcome;
}

/** Options of {@link startProducer}. */
export interface ProducerOptions {
  /** The replicas' API base URLs now, e.g. http://127.0.0.1:PORT (read per request: they may move). */
  apis: () => readonly string[];
  /** Bearer token of the API. */
  token: string;
  /** New operations per second (the 100). */
  ratePerSecond: number;
  /** The operation to enqueue as tick `i` with `ref`. */
  operation: (ref: string, i: number) => Record<string, unknown>;
  /** Prefix of every ref, e.g. `chaos-`. */
  refPrefix: string;
  /** A request unanswered this long is aborted and counted as hung (default: 30000). */
  hangMs?: number;
  /**
   * Operations in flight at most, as a client's connection pool bounds them; a tick beyond it is
   * shed (default: 200). Without a bound, a saturated replica's queue and the retries of its
   * timeouts would grow without end.
   */
  maxInFlight?: number;
}

/** A running producer. */
export interface Producer {
  /** Ticks so far (one new ref each). */
  ticks(): number;
  /** Resolves once `n` more ticks have happened: how phases of the harness are measured out. */
  afterTicks(n: number): Promise<void>;
  /** Every request so far, in start order. */
  readonly requests: readonly ProducerRequest[];
  /** Every ref produced so far with the time of its tick. */
  readonly produced: ReadonlyArray<{ ref: string; atMs: number }>;
  /** Refs answered 2xx. */
  readonly acknowledged: ReadonlySet<string>;
  /** Stops ticking and waits for the requests in flight to end. */
  stop(): Promise<void>;
}

/** Whether an outcome deserves one more try at the other replica: no trustworthy answer came. */
export function worthRetrying(outcome: RequestOutcome): boolean {
  if (outcome === 'shed') return false;
  return typeof outcome !== 'number' || outcome >= 500;
}

/** Ticks due at `nowMs` for a producer started at `startMs`, counted from 0. */
export function ticksDue(startMs: number, nowMs: number, ratePerSecond: number): number {
  return Math.floor(((nowMs - startMs) * ratePerSecond) / 1000) + 1;
}

export function startProducer(options: ProducerOptions): Producer {
  const hangMs = options.hangMs ?? 30_000;
  const maxInFlight = options.maxInFlight ?? 200;
  const requests: ProducerRequest[] = [];
  const produced: Array<{ ref: string; atMs: number }> = [];
  const acknowledged = new Set<string>();
  const inflight = new Set<Promise<void>>();
  const waiters: Array<{ at: number; resolve: () => void }> = [];
  const startMs = Date.now();
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;

  const post = async (ref: string, api: number, body: string): Promise<RequestOutcome> => {
    const started = Date.now();
    const t0 = performance.now();
    let outcome: RequestOutcome;
    try {
      const res = await fetch(`${options.apis()[api]}/v1/operations`, {
        method: 'POST',
        headers: { authorization: `Bearer ${options.token}`, 'content-type': 'application/json' },
        body,
        signal: AbortSignal.timeout(hangMs),
      });
      await res.arrayBuffer();
      outcome = res.status;
    } catch (err) {
      outcome = (err as Error).name === 'TimeoutError' ? 'hung' : 'network';
    }
    requests.push({ ref, api, startedMs: started, ms: performance.now() - t0, outcome });
    return outcome;
  };

  const send = async (i: number): Promise<void> => {
    const ref = `${options.refPrefix}${String(i).padStart(6, '0')}`;
    produced.push({ ref, atMs: Date.now() });
    const body = JSON.stringify(options.operation(ref, i));
    const count = options.apis().length;
    const first = i % count;
    let outcome = await post(ref, first, body);
    if (worthRetrying(outcome)) outcome = await post(ref, (first + 1) % count, body);
    if (typeof outcome === 'number' && outcome >= 200 && outcome < 300) acknowledged.add(ref);
  };

  const tick = () => {
    if (stopped) return;
    const due = ticksDue(startMs, Date.now(), options.ratePerSecond);
    while (produced.length < due) {
      if (inflight.size >= maxInFlight) {
        const ref = `${options.refPrefix}${String(produced.length).padStart(6, '0')}`;
        produced.push({ ref, atMs: Date.now() });
        requests.push({ ref, api: -1, startedMs: Date.now(), ms: 0, outcome: 'shed' });
        continue;
      }
      const task = send(produced.length);
      inflight.add(task);
      void task.finally(() => inflight.delete(task));
    }
    for (const w of waiters.filter((w) => produced.length >= w.at)) {
      waiters.splice(waiters.indexOf(w), 1);
      w.resolve();
    }
    const nextAt = startMs + (produced.length * 1000) / options.ratePerSecond;
    timer = setTimeout(tick, Math.max(0, nextAt - Date.now()));
  };
  tick();

  return {
    ticks: () => produced.length,
    afterTicks(n) {
      const at = produced.length + n;
      return new Promise((resolve) => waiters.push({ at, resolve }));
    },
    requests,
    produced,
    acknowledged,
    async stop() {
      stopped = true;
      clearTimeout(timer);
      for (const w of waiters.splice(0)) w.resolve();
      while (inflight.size > 0) await Promise.allSettled([...inflight]);
    },
  };
}
