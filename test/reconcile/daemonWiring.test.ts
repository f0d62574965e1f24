import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { daemonComponents } from '../../src/app/daemon.js';
import { openSqliteDaemon } from '../../src/app/sqliteDaemon.js';
import { silentLogger } from '../../src/common/log.js';
import { loadConfig } from '../../src/config/config.js';
import { tempDir } from '../helpers/context.js';

/** The daemon runs the reconciler last, after the mirror, unless `reconcile.enabled = false`. */

async function componentNames(overrides: Record<string, unknown>): Promise<string[]> {
  const { dir, cleanup } = tempDir();
  try {
    const config = loadConfig({ env: { VCU_SYNC_DB: path.join(dir, 'daemon.db') }, overrides });
    const { ctx, stores } = await openSqliteDaemon(config, silentLogger);
    try {
      return daemonComponents(ctx, stores).map((c) => c.name);
    } finally {
      await stores.close();
    }
  } finally {
    cleanup();
  }
}

describe('the reconciler in the daemon wiring', () => {
  it('starts after the mirror by default, and not at all when disabled', async () => {
    const names = await componentNames({});
    expect(names.slice(-2)).toEqual(['mirror', 'reconciler']);
    expect(await componentNames({ 'reconcile.enabled': false })).not.toContain('reconciler');
  });
});
