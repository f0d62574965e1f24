import { describe, expect, it } from 'vitest';
import { createMetrics } from '../src/common/metrics.js';
import { summarizeWaits } from './bench/lib/commitWaits.js';

describe("the bench's summary of the daemon's commit waits", () => {
  it('counts groups per connection and phase, those past 5 and 20 ms, and the bucket of the 99th percentile', async () => {
    const metrics = createMetrics();
    const main = { connection: 'main', phase: 'lock' };
    for (let i = 0; i < 97; i++) metrics.databaseWait.observe(main, 0.0005);
    metrics.databaseWait.observe(main, 0.008);
    metrics.databaseWait.observe(main, 0.03);
    metrics.databaseWait.observe(main, 0.3);
    metrics.databaseWait.observe({ connection: 'dispatcher', phase: 'fsync' }, 0.004);
    const text = await metrics.registry.metrics();
    expect(summarizeWaits(text)).toBe(
      'main lock: 100 groups, 3 > 5 ms, 2 > 20 ms, p99 <= 50 ms; dispatcher fsync: 1 groups, 0 > 5 ms, 0 > 20 ms, p99 <= 5 ms',
    );
    expect(summarizeWaits('')).toBe('no commit waited');
  });
});
