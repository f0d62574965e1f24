import { describe, expect, it } from 'vitest';
import { onStopSignals } from '../../src/process/stopSignals.js';
import { until } from '../ops/child.js';

describe('onStopSignals', () => {
  it('starts the stop on the first real SIGINT/SIGTERM and only notes the ones after it', async () => {
    const stops: NodeJS.Signals[] = [];
    const repeats: Array<[NodeJS.Signals, number]> = [];
    const before = process.listenerCount('SIGINT');
    const unlisten = onStopSignals({
      stop: (signal) => stops.push(signal),
      repeated: (signal, count) => repeats.push([signal, count]),
    });
    try {
      // Real signals to this process: without a listener left after the first, the second kills it.
      process.kill(process.pid, 'SIGINT');
      await until('the first signal', () => stops.length === 1);
      process.kill(process.pid, 'SIGINT');
      await until('the second signal', () => repeats.length === 1);
      process.kill(process.pid, 'SIGTERM');
      await until('the third signal', () => repeats.length === 2);
      expect(stops).toEqual(['SIGINT']);
      expect(repeats).toEqual([
        ['SIGINT', 2],
        ['SIGTERM', 3],
      ]);
    } finally {
      unlisten();
    }
    // Handing back leaves no listener behind.
    expect(process.listenerCount('SIGINT')).toBe(before);
  });
});
