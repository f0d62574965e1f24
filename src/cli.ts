import { realpathSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { Command, CommanderError, Option } from 'commander';
import { completeArgumentsWith, runCompletion } from './commands/completion.js';
import { ConfigError, EXIT_CONFIG, errorMessage, UserError } from './common/errors.js';
import { scrubText } from './common/redact.js';
import { VERSION } from './common/version.js';
import { loadConfig, unknownVariableWarnings } from './config/config.js';
import { sizeHeapFor } from './process/heapSizing.js';
import { unsupportedNodeReason } from './process/nodeVersion.js';

/** What `sync` takes, for its help and completion; `vcu-sync sync` itself checks them (SYNC_TARGETS). */
export const SYNC_RESOURCE_NAMES = ['projects', 'issuances', 'units', 'custody'] as const;

/** What `schema` takes, for its help and completion; `vcu-sync schema` itself checks them (mirror/shape/schemaQuery.ts). */
export const SCHEMA_RESOURCE_NAMES = [
  'projects',
  'issuances',
  'units',
  'unit_operations',
  'custody_projects',
  'custody_issuances',
  'custody_units',
] as const;

/**
 * The command line. Each command loads what it needs lazily, so `vcu-sync status` does not pay
 * for the simulator and `--help` answers at once. Errors caused by the user print one line and
 * exit non-zero; only a bug prints a stack trace, and only with VCU_SYNC_DEBUG=1.
 */

type Action = (...args: never[]) => Promise<number>;

function configOf(cmd: Command) {
  const { config } = cmd.optsWithGlobals<{ config?: string }>();
  // A misspelled variable is named before the configuration is read: it may be why that fails.
  for (const line of unknownVariableWarnings(process.env))
    process.stderr.write(`vcu-sync: warning: ${line}\n`);
  return loadConfig({ file: config });
}

function wrap(action: Action) {
  return async (...args: unknown[]) => {
    process.exitCode = await (action as (...a: unknown[]) => Promise<number>)(...args);
  };
}

export function buildProgram(): Command {
  const program = new Command('vcu-sync')
    .description('Mirror a carbon registry operator, forward marketplace operations, receive its decisions.')
    .option('--config <file>', 'TOML configuration file (default: $VCU_SYNC_CONFIG)')
    .version(VERSION, '-V, --version', 'print the version and exit')
    .showHelpAfterError('(run vcu-sync --help for usage)')
    .exitOverride();

  program
    .command('run')
    .description('run the daemon: scheduler, dispatcher, API and webhook listeners, until SIGTERM')
    .action(
      wrap(async (_opts: unknown, cmd: Command) => {
        const { runDaemonCommand } = await import('./commands/run.js');
        return runDaemonCommand(configOf(cmd));
      }),
    );

  const sync = program
    .command('sync')
    .description('sync the named resources once (all if none), then exit; 0 only if all succeeded')
    .argument('[resources...]', SYNC_RESOURCE_NAMES.join(', '))
    .option('--full', 'full scan instead of incremental (units)')
    .action(
      wrap(async (resources: string[], opts: { full?: boolean }, cmd: Command) => {
        const { runSyncCli } = await import('./commands/syncCli.js');
        return runSyncCli(configOf(cmd), resources, opts.full ?? false);
      }),
    );
  completeArgumentsWith(sync, SYNC_RESOURCE_NAMES);

  program
    .command('status')
    .description('health for on-call; exit 0 ok, 1 warning, 2 critical')
    .option('--json', 'machine-readable output')
    .action(
      wrap(async (opts: { json?: boolean }, cmd: Command) => {
        const { runStatusCommand } = await import('./commands/status.js');
        return runStatusCommand(configOf(cmd), { json: opts.json ?? false });
      }),
    );

  const schema = program
    .command('schema')
    .description("the shape learned of the operator's records, per field, and the changes seen in it")
    .argument('[resource]', `one mirror table: ${SCHEMA_RESOURCE_NAMES.join(', ')} (default: every one)`)
    .option('--since <date>', 'only changes first seen at or after this ISO date-time or date')
    .option('--json', 'print what GET /v1/schema answers')
    .action(
      wrap(async (resource: string | undefined, opts: { since?: string; json?: boolean }, cmd: Command) => {
        const { runSchemaCli } = await import('./commands/schema.js');
        return runSchemaCli(configOf(cmd), resource, { since: opts.since, json: opts.json ?? false });
      }),
    );
  completeArgumentsWith(schema, SCHEMA_RESOURCE_NAMES);

  program
    .command('reconcile')
    .description(
      "compare the marketplace's reported operations with the registry's data now; print the open findings and the balance sheets; exit 0 none above info, 1 warnings, 2 critical",
    )
    .option('--issuance <id>', 'only this issuance (and its units): a pass over it, its findings and sheets')
    .addOption(
      new Option(
        '--format <format>',
        'table, json (what GET /v1/reconciliation answers) or csv (for auditors)',
      )
        .choices(['table', 'json', 'csv'])
        .default('table'),
    )
    .action(
      wrap(async (opts: { issuance?: string; format: 'table' | 'json' | 'csv' }, cmd: Command) => {
        const { runReconcileCli } = await import('./commands/reconcile.js');
        return runReconcileCli(configOf(cmd), { issuance: opts.issuance, format: opts.format });
      }),
    );

  program
    .command('enqueue')
    .description('queue a notification (JSON file, or - for stdin) and print the stored entry')
    .argument('<file>', 'JSON file, or - for standard input')
    .action(
      wrap(async (file: string, _opts: unknown, cmd: Command) => {
        const { runEnqueueCli } = await import('./commands/outboxCli.js');
        return runEnqueueCli(configOf(cmd), file);
      }),
    );

  program
    .command('outbox')
    .description('inspect and steer the queue: list | show REF | retry REF | cancel REF')
    .addArgument(
      program
        .createArgument('<action>', 'list, show, retry or cancel')
        .choices(['list', 'show', 'retry', 'cancel']),
    )
    .argument('[ref]', 'marketplaceTransactionRef')
    .option('--json', 'machine-readable output')
    .addOption(new Option('--state <state>', 'list: only rows in this state'))
    .addOption(new Option('--cursor <id>', 'list: start after this row (the "more" line names it)'))
    .action(
      wrap(
        async (
          action: string,
          ref: string | undefined,
          opts: { json?: boolean; state?: string; cursor?: string },
          cmd: Command,
        ) => {
          const { runOutboxCli } = await import('./commands/outboxCli.js');
          return runOutboxCli(configOf(cmd), action, ref, {
            json: opts.json ?? false,
            state: opts.state,
            cursor: opts.cursor,
          });
        },
      ),
    );

  program
    .command('deliveries')
    .description('subscriber deliveries: list | retry ID | redrive --since ISO|DURATION')
    .addArgument(
      program.createArgument('<action>', 'list, retry or redrive').choices(['list', 'retry', 'redrive']),
    )
    .argument('[id]', 'delivery id (retry)')
    .option('--json', 'machine-readable output')
    .addOption(new Option('--state <state>', 'list: only rows in this state'))
    .addOption(new Option('--subscriber <name>', 'list, redrive: only this subscriber'))
    .addOption(new Option('--cursor <id>', 'list: start after this row (the "more" line names it)'))
    .addOption(new Option('--since <when>', 'redrive: dead since this ISO time or duration (30m, 2h, 3d)'))
    .action(
      wrap(
        async (
          action: string,
          id: string | undefined,
          opts: { json?: boolean; state?: string; subscriber?: string; since?: string; cursor?: string },
          cmd: Command,
        ) => {
          const { runDeliveriesCli } = await import('./commands/deliveries.js');
          return runDeliveriesCli(configOf(cmd), action, id, { ...opts, json: opts.json ?? false });
        },
      ),
    );

  program
    .command('simulator')
    .description('run the operator simulator (see --help of the simulator for its flags)')
    .allowUnknownOption()
    .helpOption(false)
    .argument('[flags...]')
    .action(
      wrap(async (flags: string[]) => {
        const { runSimulatorCommand } = await import('./commands/simulator.js');
        return runSimulatorCommand(flags);
      }),
    );

  program
    .command('demo')
    .description('simulator + daemon together on loopback with a local database')
    .option('--dir <dir>', 'where the demo keeps its database', '.vcu-sync-demo')
    .option('--seconds <n>', 'stop after this many seconds (default: run until Ctrl-C)')
    .action(
      wrap(async (opts: { dir: string; seconds?: string }) => {
        const { runDemoCommand } = await import('./commands/demo.js');
        return runDemoCommand({
          dir: opts.dir,
          seconds: opts.seconds === undefined ? undefined : Number(opts.seconds),
        });
      }),
    );

  const db = program.command('db').description('schema and online backup');
  db.command('migrate')
    .description('apply pending migrations')
    .action(
      wrap(async (_opts: unknown, cmd: Command) => {
        const { runDbMigrate } = await import('./commands/db.js');
        return runDbMigrate(configOf(cmd));
      }),
    );
  db.command('backup')
    .description('online backup of the database to FILE, safe while the daemon writes')
    .argument('<file>', 'the new backup file (must not exist)')
    .action(
      wrap(async (file: string, _opts: unknown, cmd: Command) => {
        const { runDbBackup } = await import('./commands/db.js');
        return runDbBackup(configOf(cmd), file);
      }),
    );

  const config = program.command('config').description('configuration');
  config
    .command('check')
    .description('validate the configuration and print it with secrets masked')
    .action(
      wrap(async (_opts: unknown, cmd: Command) => {
        const { runConfigCheck } = await import('./commands/configCheck.js');
        return runConfigCheck(configOf(cmd));
      }),
    );

  program
    .command('completion')
    .description(
      'print a shell completion script: vcu-sync completion bash > /etc/bash_completion.d/vcu-sync',
    )
    .addArgument(program.createArgument('<shell>', 'the shell (bash)').choices(['bash']))
    .action(wrap(async (shell: string) => runCompletion(program, shell)));
  return program;
}

/** Runs the CLI; resolves to the exit code. */
export async function main(argv: string[]): Promise<number> {
  const tooOld = unsupportedNodeReason(process.version, process.execPath);
  if (tooOld) {
    process.stderr.write(`vcu-sync: ${tooOld}\n`);
    return EXIT_CONFIG;
  }
  const program = buildProgram();
  try {
    await program.parseAsync(argv, { from: 'user' });
    return typeof process.exitCode === 'number' ? process.exitCode : 0;
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode === 0 ? 0 : 64;
    if (err instanceof ConfigError && err.problems.length > 1) {
      // One line per problem, so each missing setting can be read (and grepped) on its own.
      for (const problem of err.problems) process.stderr.write(`vcu-sync: config: ${scrubText(problem)}\n`);
      return err.exitCode;
    }
    if (err instanceof UserError) {
      process.stderr.write(`vcu-sync: ${scrubText(err.message)}\n`);
      return err.exitCode;
    }
    process.stderr.write(`vcu-sync: unexpected error: ${scrubText(errorMessage(err))}\n`);
    if (process.env.VCU_SYNC_DEBUG === '1' && err instanceof Error)
      process.stderr.write(`${scrubText(err.stack ?? '')}\n`);
    return 70;
  }
}

/** Runs the CLI as a process: sets the exit code from {@link main}. Used by bin/vcu-sync.js and `tsx src/cli.ts`. */
export function runAsProcess(): void {
  sizeHeapFor(process.argv.slice(2));
  main(process.argv.slice(2)).then((code) => {
    process.exitCode = code;
  });
}

// Started as a script (`node dist/cli.js`, `tsx src/cli.ts`) rather than imported by the bin or a test.
if (process.argv[1] && import.meta.url === pathToFileURL(realpathSync(process.argv[1])).href) runAsProcess();
