// Preloaded with `node --import`: samples the main thread's event-loop delay (perf_hooks) and
// prints its p50/p99/max (ms) on stderr as the process exits, to show where API stalls come from.
// Worker threads inherit the preload (execArgv): they report under their own line, since a worker's
// loop blocks by design (the sync thread waits for the write lock inside SQLite) and its figures
// once passed for the main thread's (a "2.5 s stall" that the main thread's CPU profile never showed).
import { writeSync } from 'node:fs';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { isMainThread, threadId } from 'node:worker_threads';

const histogram = monitorEventLoopDelay({ resolution: 5 });
histogram.enable();
process.on('exit', () => {
  histogram.disable();
  const ms = (ns) => (ns / 1e6).toFixed(1);
  writeSync(
    2,
    `\n${isMainThread ? 'BENCH_LOOP_DELAY' : `BENCH_WORKER_LOOP_DELAY thread ${threadId}`} p50=${ms(histogram.percentile(50))} p99=${ms(histogram.percentile(99))} max=${ms(histogram.max)}\n`,
  );
});

// BENCH_LOOP_DELAY_TICK_MS=N: the main thread also prints its delay over each N ms (then resets),
// stamped with the wall clock, so a bench can take the figures of one phase only.
const tickMs = Number(process.env.BENCH_LOOP_DELAY_TICK_MS);
if (isMainThread && tickMs > 0) {
  const tickHistogram = monitorEventLoopDelay({ resolution: 5 });
  tickHistogram.enable();
  setInterval(() => {
    const ms = (ns) => (ns / 1e6).toFixed(1);
    writeSync(
      2,
      `\nBENCH_LOOP_DELAY_TICK ${Date.now()} p99=${ms(tickHistogram.percentile(99))} max=${ms(tickHistogram.max)}\n`,
    );
    tickHistogram.reset();
  }, tickMs).unref();
}
