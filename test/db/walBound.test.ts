import { statSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { createSyncThread } from '../../src/sqlite/syncThread.js';
import { testContext } from '../helpers/context.js';
import { captureLog } from '../mirror/harness.js';
import { enqueueOperationGrouped, tokenization } from '../outbox/fixtures.js';

/**
 * While a worker thread runs, it checkpoints the WAL and the main connection does not. A steady
 * stream of commits on the main connection (the API under load) must not grow the WAL without
 * bound: PASSIVE checkpoints alone never catch up with it (measured: 295 MiB after ten seconds of
 * webhooks), so the worker brings it back in full once it passes its bound, and the next commit
 * starts the WAL from the top.
 */
describe('the WAL while a worker thread checkpoints it', () => {
  it('stays within a few times its bound under a steady stream of commits from the main thread', async () => {
    const boundMib = 8;
    const ctx = testContext({ overrides: { 'database.wal_bound_mib': boundMib } });
    const lines = captureLog(ctx);
    const thread = createSyncThread(ctx, ctx.database.sqlite);
    await thread.start?.();
    try {
      const bounded = () => lines.filter((l) => l.event === 'database.wal.bounded').length;
      // Written until the worker has brought the WAL back six times: without those, six times its
      // bound would have piled up.
      let i = 0;
      const deadline = Date.now() + 120_000;
      while (bounded() < 6) {
        if (Date.now() > deadline)
          throw new Error(`only ${bounded()} bounded checkpoints after ${i} enqueues`);
        const burst = Array.from({ length: 50 }, () =>
          enqueueOperationGrouped(ctx, tokenization(`wal-${i}`, { unitId: 10_000 + i++ })),
        );
        expect((await Promise.all(burst)).every((r) => r.status === 201)).toBe(true);
      }
      const walBytes = statSync(`${ctx.database.path}-wal`).size;
      expect(walBytes).toBeLessThan(3 * boundMib * 1024 * 1024);
    } finally {
      await thread.stop();
      ctx.dispose();
    }
  });
});
