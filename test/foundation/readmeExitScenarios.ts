import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { openSqliteContext } from '../../src/app/sqliteStores.js';
import { demoOperation } from '../../src/commands/demoOperations.js';
import { silentLogger } from '../../src/common/log.js';
import { loadConfig } from '../../src/config/config.js';
import { DEFAULT_WEBHOOK_SECRET, type Simulator, startSimulator } from '../../src/simulator/index.js';
import { acquireOwnership } from '../../src/sqlite/ownership.js';
import { tempDir } from '../helpers/context.js';
import { daemonEnv, daemonToml, spawnCli, untilEvent, writeToml } from '../ops/child.js';
import { cancelQueued, enqueueOperation } from '../outbox/fixtures.js';

/**
 * One way to make each command exit with each code README documents, run for real in a child
 * process (readme.test.ts). A new documented code needs a scenario here.
 */

/** A way to make a command exit with one code. */
export interface Scenario {
  /** What it does, shown when the exit code is not the one expected. */
  what: string;
  /** Runs the command in a child process; resolves with its exit code and output. */
  run(): Promise<{ code: number | null; output: string }>;
}

const { dir: root, cleanup } = tempDir('vcu-sync-readme-');
let simulator: Promise<Simulator> | undefined;
let counter = 0;

/** A fresh folder for one scenario. */
function folder(): string {
  const dir = path.join(root, `s${++counter}`);
  mkdirSync(dir);
  return dir;
}

/** A small simulator over loopback, shared by the scenarios that talk to the operator. */
function sim(): Promise<Simulator> {
  simulator ??= startSimulator({ projects: 10, issuances: 20, units: 50 });
  return simulator;
}

/** Stops the simulator and removes the scenarios' files. */
export async function closeScenarios(): Promise<void> {
  if (simulator) await (await simulator).close();
  cleanup();
}

/** Runs `vcu-sync ARGS` with exactly `env` (a database always named, so nothing lands in the repository). */
async function vcu(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null; output: string }> {
  const child = spawnCli(args, { HOME: root, ...env });
  const code = await child.exited;
  return { code, output: child.output() };
}

const results = new WeakMap<Scenario, Promise<{ code: number | null; output: string }>>();

/** Runs the scenario, once however many codes it stands for. */
export function scenarioExit(scenario: Scenario): Promise<{ code: number | null; output: string }> {
  let result = results.get(scenario);
  if (!result) {
    result = scenario.run();
    results.set(scenario, result);
  }
  return result;
}

const scenario = (what: string, run: Scenario['run']): Scenario => ({ what, run });

/**
 * A migrated database in a fresh folder (made here, not by a child: the scenarios are about the
 * command under test), the environment naming it, and a way to change it before that command runs.
 */
function migrated(
  extra: NodeJS.ProcessEnv = {},
  prepare?: (ctx: ReturnType<typeof openSqliteContext>) => void,
) {
  const dir = folder();
  const env = { VCU_SYNC_DB: path.join(dir, 'vcu.db'), ...extra };
  const ctx = openSqliteContext(loadConfig({ env }), silentLogger);
  try {
    prepare?.(ctx);
  } finally {
    ctx.database.close();
  }
  return { dir, env };
}

/** Writes a valid notification (ref `ref`) to a file and returns its path. */
function notificationFile(dir: string, ref: string, amount = 10): string {
  const file = path.join(dir, `${ref}-${amount}.json`);
  const body = {
    ...demoOperation(0, 'mkt-readme', new Date('2026-01-02T03:04:05Z')),
    marketplaceTransactionRef: ref,
  };
  writeFileSync(file, JSON.stringify({ ...body, transactionAmount: amount }));
  return file;
}

/** A database holding one queued operation `ref` (then cancelled, if asked). */
function withOperation(ref: string, cancel = false) {
  return migrated({}, (ctx) => {
    const body = {
      ...demoOperation(0, 'mkt-readme', new Date('2026-01-02T03:04:05Z')),
      marketplaceTransactionRef: ref,
    };
    const result = enqueueOperation(ctx, { ...body, transactionAmount: 10 });
    if (result.status !== 201) throw new Error(`enqueue failed: ${JSON.stringify(result)}`);
    if (cancel) cancelQueued(ctx, ref);
  });
}

/**
 * A database holding one approved Tokenization of `tonnes` t on issuance `ISS-R` (never in custody:
 * a warning), and, with `amount`, that issuance in the public list with that amount (beyond it: critical).
 */
function withReportedTokenization(tonnes: number, amount?: number) {
  return migrated({}, (ctx) => {
    const t = '2026-01-02T00:00:00.000Z';
    const body = JSON.stringify({
      operationType: 'Tokenization',
      issuanceId: 'ISS-R',
      transactionAmount: tonnes,
    });
    ctx.database.sqlite
      .prepare(
        `INSERT INTO outbox (marketplaceTransactionRef, operationType, body, body_hash, state, attempts,
           next_attempt_at, created_at, updated_at, accepted_at, decided_at)
         VALUES ('readme-reconcile', 'tokenization', ?, 'h', 'approved', 1, ?, ?, ?, ?, ?)`,
      )
      .run(body, t, t, t, t, t);
    if (amount !== undefined)
      ctx.database.sqlite
        .prepare(
          `INSERT INTO issuances (issuanceId, issuanceAmount, _raw, _hash, _first_seen_at, _last_seen_at)
           VALUES ('ISS-R', ?, '{}', 'h', ?, ?)`,
        )
        .run(amount, t, t);
  });
}

/** The environment of a daemon or sync pointed at the simulator, schedules off. */
async function operatorEnv(extra: NodeJS.ProcessEnv = {}): Promise<NodeJS.ProcessEnv> {
  const dir = folder();
  return daemonEnv(dir, (await sim()).url, writeToml(dir, daemonToml({ onStartup: false })), extra);
}

const noOperator = { VCU_SYNC_DB: '/nonexistent/never.db' };

/** Scenarios per command (as README's command table names it) and exit code. */
export const EXIT_SCENARIOS: Record<string, Record<number, Scenario>> = {
  run: {
    0: scenario('run against the simulator, stopped by SIGTERM once ready', async () => {
      const child = spawnCli(['run'], { HOME: root, ...(await operatorEnv()) });
      await untilEvent(child, 'daemon.ready');
      child.child.kill('SIGTERM');
      return { code: await child.exited, output: child.output() };
    }),
    75: scenario('run on a database another daemon owns', async () => {
      const env = await operatorEnv();
      // This process holds the ownership lock, as a running daemon would.
      const owner = await acquireOwnership(env.VCU_SYNC_DB!);
      try {
        return await vcu(['run'], env);
      } finally {
        owner.release();
      }
    }),
    78: scenario('run without an operator URL', () => vcu(['run'], noOperator)),
  },
  sync: {
    0: scenario('sync projects from the simulator', async () =>
      vcu(['sync', 'projects'], await operatorEnv()),
    ),
    1: scenario('sync projects with a key the operator refuses', async () =>
      vcu(['sync', 'projects'], await operatorEnv({ VCU_SYNC_API_KEY: 'not-the-key' })),
    ),
    78: scenario('sync without an API key', () =>
      vcu(['sync'], { ...noOperator, VCU_SYNC_OPERATOR_URL: 'http://127.0.0.1:1' }),
    ),
  },
  status: {
    0: scenario('status of a new database with every schedule off (nothing is due)', async () => {
      const dir = folder();
      const toml = writeToml(dir, daemonToml({ onStartup: false }));
      const { env } = migrated({ VCU_SYNC_CONFIG: toml });
      return vcu(['status'], env);
    }),
    1: scenario('status of a new database on the default schedules (never synced)', async () =>
      vcu(['status'], migrated().env),
    ),
    2: scenario('status without a database', () =>
      vcu(['status'], { VCU_SYNC_DB: path.join(root, 'none.db') }),
    ),
  },
  enqueue: {
    0: scenario('enqueue a valid notification', async () => {
      const dir = folder();
      return vcu(['enqueue', notificationFile(dir, 'readme-0')], { VCU_SYNC_DB: path.join(dir, 'vcu.db') });
    }),
    1: scenario('enqueue another body under a ref already queued', async () => {
      const { dir, env } = withOperation('readme-1');
      return vcu(['enqueue', notificationFile(dir, 'readme-1', 11)], env);
    }),
    65: scenario('enqueue a file that is not JSON', async () => {
      const dir = folder();
      writeFileSync(path.join(dir, 'bad.json'), '{ not json');
      return vcu(['enqueue', path.join(dir, 'bad.json')], { VCU_SYNC_DB: path.join(dir, 'vcu.db') });
    }),
  },
  outbox: {
    0: scenario('outbox show a queued ref', async () =>
      vcu(['outbox', 'show', 'readme-show'], withOperation('readme-show').env),
    ),
    1: scenario('outbox retry a cancelled ref (refused)', () =>
      vcu(['outbox', 'retry', 'readme-retry'], withOperation('readme-retry', true).env),
    ),
    3: scenario('outbox show an unknown ref', async () =>
      vcu(['outbox', 'show', 'no-such-ref'], migrated().env),
    ),
  },
  deliveries: {
    0: scenario('deliveries list on a migrated database', async () =>
      vcu(['deliveries', 'list'], migrated().env),
    ),
    1: scenario('deliveries list without a database', () =>
      vcu(['deliveries', 'list'], { VCU_SYNC_DB: path.join(root, 'none.db') }),
    ),
    3: scenario('deliveries retry an unknown id', async () =>
      vcu(['deliveries', 'retry', '4242'], migrated().env),
    ),
  },
  schema: {
    0: scenario('schema on a migrated database (nothing learned yet)', async () =>
      vcu(['schema'], migrated().env),
    ),
    1: scenario('schema without a database', () =>
      vcu(['schema'], { VCU_SYNC_DB: path.join(root, 'none.db') }),
    ),
    2: scenario('schema of an unknown resource', async () => vcu(['schema', 'widgets'], migrated().env)),
  },
  reconcile: {
    0: scenario('reconcile a migrated database (nothing reported)', async () =>
      vcu(['reconcile'], migrated().env),
    ),
    1: scenario('reconcile an operation on an issuance never in custody (warning)', async () =>
      vcu(['reconcile'], withReportedTokenization(1).env),
    ),
    2: scenario('reconcile 30 t tokenized of an issuance of 20 t (critical)', async () =>
      vcu(['reconcile', '--format', 'csv'], withReportedTokenization(30, 20).env),
    ),
    3: scenario('reconcile without a database', () =>
      vcu(['reconcile'], { VCU_SYNC_DB: path.join(root, 'none.db') }),
    ),
    64: scenario('reconcile --format xml', async () => vcu(['reconcile', '--format', 'xml'], migrated().env)),
  },
  simulator: {
    64: scenario('simulator with a bad flag', () => vcu(['simulator', '--units', 'many'], noOperator)),
  },
  demo: {
    64: scenario('demo with a bad --seconds', () =>
      vcu(['demo', '--seconds', '-1', '--dir', folder()], noOperator),
    ),
  },
  'db migrate': {
    0: scenario('db migrate a new file', async () =>
      vcu(['db', 'migrate'], { VCU_SYNC_DB: path.join(folder(), 'new.db') }),
    ),
    1: scenario('db migrate into a folder that does not exist', () =>
      vcu(['db', 'migrate'], { VCU_SYNC_DB: path.join(root, 'no', 'such', 'x.db') }),
    ),
  },
  'db backup': {
    0: scenario('db backup to a new file', async () => {
      const { dir, env } = migrated();
      return vcu(['db', 'backup', path.join(dir, 'copy.db')], env);
    }),
    1: scenario('db backup over an existing file', async () => {
      const { dir, env } = migrated();
      writeFileSync(path.join(dir, 'taken.db'), '');
      return vcu(['db', 'backup', path.join(dir, 'taken.db')], env);
    }),
    64: scenario('db backup with database.url set (PostgreSQL: use pg_dump)', () =>
      vcu(['db', 'backup', path.join(folder(), 'copy.db')], {
        VCU_SYNC_DATABASE_URL: 'postgres://vcu@127.0.0.1:1/vcu',
      }),
    ),
  },
  'config check': {
    0: scenario('config check with what run needs', () =>
      vcu(['config', 'check'], {
        ...noOperator,
        VCU_SYNC_OPERATOR_URL: 'http://127.0.0.1:1',
        VCU_SYNC_API_KEY: 'k-readme',
        VCU_SYNC_WEBHOOK_SECRET: DEFAULT_WEBHOOK_SECRET,
      }),
    ),
    78: scenario('config check with nothing set', () => vcu(['config', 'check'], noOperator)),
  },
  'completion bash': {
    0: scenario('completion bash', () => vcu(['completion', 'bash'], noOperator)),
    64: scenario('completion for a shell it has no script for', () =>
      vcu(['completion', 'tcsh'], noOperator),
    ),
  },
};

/** Scenarios for README's "Exit codes for errors" sentence. */
export const GENERAL_EXIT_SCENARIOS: Record<number, Scenario> = {
  1: scenario('bad input: an unknown sync resource', async () =>
    vcu(['sync', 'planets'], await operatorEnv()),
  ),
  64: scenario('bad usage: outbox show without a ref', async () => vcu(['outbox', 'show'], migrated().env)),
  65: EXIT_SCENARIOS.enqueue![65]!,
  75: EXIT_SCENARIOS.run![75]!,
  78: scenario('configuration error: an unknown key', () => {
    const file = path.join(folder(), 'bad.toml');
    writeFileSync(file, '[outbox]\nconcurency = 3\n');
    return vcu(['config', 'check', '--config', file], noOperator);
  }),
  70: scenario('internal error: a database whose outbox table was dropped behind its back', async () => {
    const { env } = migrated({}, (ctx) => {
      ctx.database.sqlite.pragma('foreign_keys = OFF');
      ctx.database.sqlite.exec('DROP TABLE outbox');
    });
    return vcu(['outbox', 'list'], env);
  }),
};
