/**
 * Request counts by path and outcome, so tests can count the pages a client fetched and the
 * retries it made. Recorded when the response closes, so faults that never answer (reset,
 * truncated) are counted too, under those names instead of a status code.
 */
export interface StatsSnapshot {
  total: number;
  /** path → outcome (status code, 'reset', 'truncated' or 'aborted') → count */
  byPath: Record<string, Record<string, number>>;
  /** method + ' ' + path → count, whatever the outcome */
  byRoute: Record<string, number>;
}

/** One interface request as it arrived: when (ms since the epoch, the simulator's clock) and where. */
export interface Arrival {
  at: number;
  method: string;
  path: string;
}

/** Arrivals kept: the latest this many (a long soak must not grow the simulator without end). */
const MAX_ARRIVALS = 100_000;

export class Stats {
  private total = 0;
  private arrived: Arrival[] = [];
  private readonly byPath = new Map<string, Map<string, number>>();
  private readonly byRoute = new Map<string, number>();

  record(method: string, path: string, outcome: string): void {
    this.total++;
    let m = this.byPath.get(path);
    if (!m) {
      m = new Map();
      this.byPath.set(path, m);
    }
    m.set(outcome, (m.get(outcome) ?? 0) + 1);
    const route = `${method} ${path}`;
    this.byRoute.set(route, (this.byRoute.get(route) ?? 0) + 1);
  }

  /**
   * Notes a request as it arrives, before it is answered: what a test counts per second to check a
   * client's rate from the receiving side.
   */
  arrive(at: number, method: string, path: string): void {
    if (this.arrived.length >= MAX_ARRIVALS) this.arrived = this.arrived.slice(MAX_ARRIVALS / 2);
    this.arrived.push({ at, method, path });
  }

  /** The requests that arrived, oldest first (the latest {@link MAX_ARRIVALS}). */
  arrivals(): readonly Arrival[] {
    return this.arrived;
  }

  /** Requests to `path` (any outcome, or only `outcome`). */
  count(path: string, outcome?: string): number {
    const m = this.byPath.get(path);
    if (!m) return 0;
    if (outcome !== undefined) return m.get(outcome) ?? 0;
    let n = 0;
    for (const v of m.values()) n += v;
    return n;
  }

  reset(): void {
    this.total = 0;
    this.arrived = [];
    this.byPath.clear();
    this.byRoute.clear();
  }

  snapshot(): StatsSnapshot {
    const byPath: Record<string, Record<string, number>> = {};
    for (const [p, m] of this.byPath) byPath[p] = Object.fromEntries(m);
    return { total: this.total, byPath, byRoute: Object.fromEntries(this.byRoute) };
  }
}
