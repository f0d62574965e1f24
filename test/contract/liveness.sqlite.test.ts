import path from 'node:path';
import { silentLogger } from '../../src/common/log.js';
import { loadConfig } from '../../src/config/config.js';
import { tempDir } from '../helpers/context.js';
import { livenessCases } from './liveness.cases.js';

/** A daemon's liveness on SQLite, a temp file per case: no PostgreSQL needed. */

livenessCases('sqlite', async () => {
  const { dir, cleanup } = tempDir();
  return {
    config: loadConfig({ env: { VCU_SYNC_DB: path.join(dir, 'live.db') } }),
    log: silentLogger,
    cleanup: async () => cleanup(),
  };
});
