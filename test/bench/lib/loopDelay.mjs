// Preloaded with `node --import`: samples the main thread's event-loop delay (perf_hooks) and
// prints its p50/p99/max (ms) on stderr as the process exits, to show where API stalls come from.
import { writeSync } from 'node:fs';
import { monitorEventLoopDelay } from 'node:perf_hooks';

const histogram = monitorEventLoopDelay({ resolution: 5 });
histogram.enable();
process.on('exit', () => {
  histogram.disable();
  const ms = (ns) => (ns / 1e6).toFixed(1);
  writeSync(
    2,
    `\nBENCH_LOOP_DELAY p50=${ms(histogram.percentile(50))} p99=${ms(histogram.percentile(99))} max=${ms(histogram.max)}\n`,
  );
});
