import { afterAll, beforeAll, describe, it } from 'vitest';
import { type ChaosRig, startChaos } from '../helpers/chaos/harness.js';
import { tempDir } from '../helpers/context.js';
import { progress, runAndCheck, SHORT_RATE, SHORT_TIMES } from './chaosCheck.js';

/**
 * Chaos, the database there but hostile (issue 25): two replicas under a fixed-rate producer
 * through both APIs while their busy backends are terminated twice a second, while every free
 * connection slot of the server is held by another client, and while a transaction that wrote to
 * every unfinished operation sits idle. End states: see chaosCheck.ts.
 */

let rig: ChaosRig;
let cleanup: () => void;
beforeAll(async () => {
  const temp = tempDir('vcu-sync-chaos-pressure-');
  cleanup = temp.cleanup;
  rig = await startChaos({
    dir: temp.dir,
    ratePerSecond: SHORT_RATE,
    cleanSeconds: 2,
    recoverySeconds: 3,
    times: SHORT_TIMES,
    say: progress,
    // Few slots: the fault fills them quickly.
    maxConnections: 60,
  });
}, 180_000);
afterAll(async () => {
  await rig?.close();
  cleanup?.();
});

describe('chaos: pressure', () => {
  it('pg_backend_kill, pool_exhaustion, idle_in_tx: both replicas alive, nothing acknowledged or decided lost, every row final', async () => {
    await runAndCheck(rig, ['pg_backend_kill', 'pool_exhaustion', 'idle_in_tx']);
  }, 300_000);
});
