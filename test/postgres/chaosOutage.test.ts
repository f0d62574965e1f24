import { afterAll, beforeAll, describe, it } from 'vitest';
import { type ChaosRig, startChaos } from '../helpers/chaos/harness.js';
import { tempDir } from '../helpers/context.js';
import { progress, runAndCheck, SHORT_RATE, SHORT_TIMES } from './chaosCheck.js';

/**
 * Chaos, the database or a replica gone for a while (issue 25): two replicas under a fixed-rate
 * producer through both APIs while PostgreSQL is stopped (`pg_ctl stop -m fast`) and started
 * again, then while one replica is SIGKILLed and started again. End states: see chaosCheck.ts.
 */

let rig: ChaosRig;
let cleanup: () => void;
beforeAll(async () => {
  const temp = tempDir('vcu-sync-chaos-outage-');
  cleanup = temp.cleanup;
  rig = await startChaos({
    dir: temp.dir,
    ratePerSecond: SHORT_RATE,
    cleanSeconds: 2,
    recoverySeconds: 3,
    times: SHORT_TIMES,
    say: progress,
  });
}, 180_000);
afterAll(async () => {
  await rig?.close();
  cleanup?.();
});

describe('chaos: outages', () => {
  it('postgres_restart then crash_recovery: both replicas alive, nothing acknowledged or decided lost, every row final', async () => {
    await runAndCheck(rig, ['postgres_restart', 'crash_recovery']);
  }, 300_000);
});
