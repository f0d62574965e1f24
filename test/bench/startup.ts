import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { RESOURCE_FIELDS } from '../../src/operator/fields.js';
import { openDatabase } from '../../src/sqlite/open.js';
import { freePort } from '../helpers/net.js';
import { daemonEnv, QUIET_DAEMON_TOML, writeConfig } from './lib/benchConfig.js';
import { cliRunner } from './lib/build.js';
import { spawnNode, waitForHealthz } from './lib/proc.js';
import type { BenchOptions, ScenarioResult } from './lib/result.js';
import { quantile } from './lib/timing.js';

/** Fills unit_operations and changes with `n` rows inside SQLite (a recursive CTE: seconds, not minutes). */
export function buildMirror(file: string, n: number): void {
  const database = openDatabase(file, { synchronous: 'normal' });
  const cols = RESOURCE_FIELDS.unit_operations.fields.map((f) => f.name);
  const value = (name: string): string => {
    if (name === 'unitsOperationID') return "'op-' || x";
    if (name === 'unitsIssuanceID') return "'iss-' || (x % 50000)";
    if (name === 'unitsQuantity') return '(x % 1000) + 1';
    if (name === 'unitsAccountOriginID' || name === 'unitsAccountDestinationID') return 'x % 9973';
    if (name === 'unitsDate') return "'2025-01-01'";
    return `'${name} ' || (x % 97)`;
  };
  const raw = `json_object(${cols.map((c) => `'${c}', ${value(c)}`).join(', ')})`;
  const at = "'2026-01-01T00:00:00.000Z'";
  database.sqlite.exec(`
    BEGIN;
    WITH RECURSIVE c(x) AS (SELECT 0 UNION ALL SELECT x + 1 FROM c WHERE x < ${n - 1})
    INSERT INTO unit_operations (${cols.map((c) => `"${c}"`).join(', ')}, _raw, _hash, _first_seen_at, _last_seen_at, _position)
    SELECT ${cols.map(value).join(', ')}, ${raw}, hex(randomblob(8)), ${at}, ${at}, x FROM c;
    INSERT INTO changes (resource, record_id, kind, at)
    SELECT 'unit_operations', unitsOperationID, 'insert', ${at} FROM unit_operations ORDER BY _position;
    COMMIT;
  `);
  database.close();
}

/**
 * Seconds from spawning `vcu-sync run` (compiled dist unless quick) on a mirror of `n` unit
 * operations until its API answers /healthz; start-up sync and schedules off, operator unreachable.
 */
export async function startupScenario(options: BenchOptions): Promise<ScenarioResult[]> {
  const rows = options.quick ? 20_000 : 1_000_000;
  const runs = options.quick ? 2 : 5;
  const cli = await cliRunner(options.quick, options.say);
  const db = path.join(options.dir, 'startup.db');
  options.say(`start-up: building a ${rows}-row mirror`);
  buildMirror(db, rows);
  const config = writeConfig(options.dir, 'startup', QUIET_DAEMON_TOML);
  const seconds: number[] = [];
  for (let i = 0; i < runs; i++) {
    const [apiPort, webhookPort] = [await freePort(), await freePort()];
    const env = daemonEnv({ db, operatorUrl: 'http://127.0.0.1:9', apiPort, webhookPort });
    const start = performance.now();
    const child = spawnNode(cli.args(['run', '--config', config]), env);
    try {
      await waitForHealthz(child, apiPort, 5);
      seconds.push((performance.now() - start) / 1000);
    } finally {
      await child.stop(10_000);
    }
  }
  const median = quantile(seconds, 0.5);
  options.say(`start-up runs: ${seconds.map((s) => s.toFixed(3)).join(', ')} s`);
  return [
    {
      scenario: `start-up with a ${rows}-row mirror`,
      measure: 'seconds to ready',
      value: median,
      baseline: null,
      ratio: null,
      target: '< 1 s',
      met: median < 1,
      notes: `child \`vcu-sync run\` (${cli.kind}), spawn until GET /healthz answers; median of ${runs}`,
      extra: { min: Math.min(...seconds), max: Math.max(...seconds) },
    },
  ];
}
