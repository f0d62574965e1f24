import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { openSqliteContext, type SqliteContext } from '../../src/app/sqliteStores.js';
import type { Clock } from '../../src/common/clock.js';
import { silentLogger } from '../../src/common/log.js';
import { loadConfig } from '../../src/config/config.js';
import { configuredDeliveriesSink } from '../../src/subscribers/subscribers.js';

/** A fresh temporary folder, removed by the returned cleanup. */
export function tempDir(prefix = 'vcu-sync-test-'): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(path.join(tmpdir(), prefix));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** Options of {@link testContext}. */
export interface TestContextOptions {
  /** Config keys as TOML spells them, e.g. { 'operator.url': url } (default: none). */
  overrides?: Record<string, unknown>;
  /** Environment for loadConfig (default: empty, so the developer's variables do not leak in). */
  env?: NodeJS.ProcessEnv;
  clock?: Clock;
  /** How the operator client's rate limit waits (default: setTimeout). */
  sleep?: (ms: number) => Promise<void>;
}

/** A real context over a real SQLite file in a temporary folder. */
export function testContext(
  options: TestContextOptions = {},
): SqliteContext & { dir: string; dispose: () => void } {
  const { dir, cleanup } = tempDir();
  const config = loadConfig({
    env: { VCU_SYNC_DB: path.join(dir, 'test.db'), ...options.env },
    overrides: options.overrides ?? {},
  });
  const ctx = openSqliteContext(config, silentLogger, {
    clock: options.clock,
    ...(options.sleep ? { sleep: options.sleep } : {}),
    // As the daemon and the CLI wire it: every state change writes the subscribers' deliveries.
    onStateChange: configuredDeliveriesSink(config),
  });
  return Object.assign(ctx, {
    dir,
    dispose: () => {
      ctx.database.close();
      cleanup();
    },
  });
}
