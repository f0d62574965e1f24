import { afterEach, describe, expect, it } from 'vitest';
import { openDaemonStores } from '../../src/app/openStores.js';
import type { DaemonStores, Opened } from '../../src/app/stores.js';
import type { Logger } from '../../src/common/log.js';
import type { Config } from '../../src/config/config.js';
import type { NewOperation } from '../../src/operations/storeSeam.js';
import { EXIT_DATABASE_OWNED } from '../../src/sqlite/ownership.js';

/**
 * A daemon's liveness through its port (src/app/liveness.ts), on either store (liveness.sqlite.test.ts,
 * liveness.pg.test.ts): the daemon's stores opened by the one root as `vcu-sync run` opens them, their
 * liveness started and stopped as the daemon does. What differs is asked of the port
 * (`sharedByProcesses`), never which store it is.
 */

/** Where a case's daemons run: the same configuration opens each (one file, or one database). */
export interface LivenessHarness {
  config: Config;
  log: Logger;
  /** Removes what the harness made (the temp folder, the database). */
  cleanup(): Promise<void>;
}

const T0 = '2026-05-01T00:00:00.000Z';
/** A lease far beyond every time here: only liveness can hand rows back. */
const LEASE_UNTIL = '2026-05-02T00:00:00.000Z';

const operations = (count: number): NewOperation[] =>
  Array.from({ length: count }, (_, i) => ({
    ref: `live-${i}`,
    operationType: 'Transfer',
    orderKey: `unit-${i}`,
    body: `{"n":${i}}`,
    hash: `h${i}`,
  }));

export function livenessCases(kind: 'sqlite' | 'postgres', harness: () => Promise<LivenessHarness>): void {
  describe(`a daemon's liveness on ${kind}`, () => {
    let cleanups: Array<() => Promise<void>> = [];
    afterEach(async () => {
      for (const cleanup of cleanups.reverse()) await cleanup();
      cleanups = [];
    });

    /** The daemon's stores as the root opens them; `shut` stops its liveness and closes them (once). */
    async function daemon(h: LivenessHarness): Promise<Opened<DaemonStores> & { shut(): Promise<void> }> {
      const opened = await openDaemonStores(h.config, h.log);
      let shutting: Promise<void> | undefined;
      const shut = () => {
        shutting ??= opened.stores.liveness.stop().then(() => opened.stores.close());
        return shutting;
      };
      cleanups.push(shut);
      return { ...opened, shut };
    }

    async function fresh(): Promise<LivenessHarness> {
      const h = await harness();
      cleanups.push(() => h.cleanup());
      return h;
    }

    it('claims nothing while starting, is alive once started, and not after its stop', async () => {
      const { stores } = await daemon(await fresh());
      const { liveness } = stores;
      expect(liveness.owner).toMatch(/\S/);
      expect(liveness.alive()).toBe(false);
      await liveness.start();
      expect(liveness.alive()).toBe(true);
      liveness.ready();
      expect(liveness.alive()).toBe(true);
      await liveness.stop();
      expect(liveness.alive()).toBe(false);
    });

    it("hands a dead owner's claims back as it starts, before anything claims", async () => {
      const { stores } = await daemon(await fresh());
      await stores.operations.insert(operations(3), T0);
      const dead = { owner: 'dead-owner', now: T0, leaseUntil: LEASE_UNTIL, limit: 10 };
      expect(await stores.operations.claim(dead)).toHaveLength(3);
      await stores.liveness.start();
      const mine = { ...dead, owner: stores.liveness.owner };
      const again = await stores.operations.claim(mine);
      expect(again.map((r) => r.marketplaceTransactionRef).sort()).toEqual(['live-0', 'live-1', 'live-2']);
      // Back unsent: the dead owner's attempt is not counted.
      expect(again.every((r) => r.attempts === 1)).toBe(true);
    });

    it('a second daemon on the same store: refused where the store has one owner, alive beside under its own where shared', async () => {
      const h = await fresh();
      const first = await daemon(h);
      await first.stores.liveness.start();
      if (!first.stores.sharedByProcesses) {
        const refused = await openDaemonStores(h.config, h.log).then(
          () => undefined,
          (err: unknown) => err as { message: string; exitCode: number },
        );
        expect(refused?.exitCode).toBe(EXIT_DATABASE_OWNED);
        expect(refused?.message).toContain(`pid ${process.pid}`);
        expect(first.stores.liveness.alive()).toBe(true);
      } else {
        const second = await daemon(h);
        await second.stores.liveness.start();
        expect(second.stores.liveness.owner).not.toBe(first.stores.liveness.owner);
        expect([first.stores.liveness.alive(), second.stores.liveness.alive()]).toEqual([true, true]);
      }
      // Once the first has stopped and closed, a new daemon opens the store and is alive.
      await first.shut();
      const next = await daemon(h);
      await next.stores.liveness.start();
      expect(next.stores.liveness.alive()).toBe(true);
    });
  });
}
