import { performance } from 'node:perf_hooks';

/** Runs `work` and returns its result with the elapsed seconds. */
export async function timed<T>(work: () => Promise<T> | T): Promise<{ result: T; seconds: number }> {
  const start = performance.now();
  const result = await work();
  return { result, seconds: (performance.now() - start) / 1000 };
}

/** The q-quantile (0..1) of the values, nearest-rank. */
export function quantile(values: readonly number[], q: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[rank]!;
}

/** The median of the values (the lower one of an even count), nearest-rank. */
export const median = (values: readonly number[]): number => quantile(values, 0.5);

/** Polls `check` every `everyMs` until it holds; throws naming `what` after `timeoutMs`. */
export async function until(
  what: string,
  check: () => boolean,
  timeoutMs = 600_000,
  everyMs = 20,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
