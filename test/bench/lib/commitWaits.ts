import { BENCH_API_TOKEN } from './benchConfig.js';

/**
 * The daemon's own account of where its group commits waited (`vcu_sync_database_wait_seconds`):
 * per connection and phase, how many groups, how many waited past 5 ms and 20 ms, and the bucket
 * holding the 99th percentile. It says whether an enqueue's slow answers came from the write lock
 * another thread held or from the disk's fsync, which the client's latencies alone cannot.
 */
export async function commitWaits(apiPort: number): Promise<string> {
  const res = await fetch(`http://127.0.0.1:${apiPort}/metrics`, {
    headers: { authorization: `Bearer ${BENCH_API_TOKEN}` },
  });
  if (!res.ok) return `metrics answered ${res.status}`;
  return summarizeWaits(await res.text());
}

/** Summarizes the histogram's cumulative buckets from a Prometheus text exposition (pure). */
export function summarizeWaits(exposition: string): string {
  const series = new Map<string, Array<[number, number]>>();
  const line = /^vcu_sync_database_wait_seconds_bucket\{([^}]*)\} (\d+)/;
  for (const text of exposition.split('\n')) {
    const m = line.exec(text);
    if (!m) continue;
    // Labels in whatever order the exposition gives them (prom-client puts `le` first).
    const labels = new Map([...m[1]!.matchAll(/(\w+)="([^"]*)"/g)].map(([, k, v]) => [k!, v!]));
    const key = `${labels.get('connection')} ${labels.get('phase')}`;
    const le = labels.get('le');
    const buckets = series.get(key) ?? [];
    buckets.push([le === '+Inf' ? Number.POSITIVE_INFINITY : Number(le), Number(m[2])]);
    series.set(key, buckets);
  }
  const parts: string[] = [];
  for (const [key, buckets] of series) {
    const total = buckets.at(-1)?.[1] ?? 0;
    if (total === 0) continue;
    const atMost = (le: number) => buckets.find(([b]) => b === le)?.[1] ?? 0;
    const p99 = buckets.find(([, n]) => n >= total * 0.99)?.[0] ?? Number.POSITIVE_INFINITY;
    parts.push(
      `${key}: ${total} groups, ${total - atMost(0.005)} > 5 ms, ${total - atMost(0.02)} > 20 ms, p99 <= ${p99 * 1000} ms`,
    );
  }
  return parts.length > 0 ? parts.join('; ') : 'no commit waited';
}
