import { once } from 'node:events';
import { sortsInByteOrder } from '../api/mirrorQueries.js';
import { openCommandStores } from '../app/openStores.js';
import { UserError } from '../common/errors.js';
import { createLogger } from '../common/log.js';
import type { Config } from '../config/config.js';
import type { Reader } from '../reconcile/facts.js';
import type { RuleSettings } from '../reconcile/findings.js';
import type { FindingSink } from '../reconcile/pass.js';
import { runPass } from '../reconcile/pass.js';
import { BAD_ISSUANCE, issuanceFilter, RECONCILE_LIMIT_MAX } from '../reconcile/reconcileQuery.js';
import {
  type BalanceSheetView,
  type FindingView,
  type OpenCounts,
  readFindings,
  readOpenCounts,
  readSheets,
  type SheetSettings,
} from '../reconcile/reconciliationReads.js';
import type { ScriptStore } from '../store/script.js';
import { configuredFindingsSink } from '../subscribers/subscribers.js';
import { type CommandStreams, commandOutput } from './commandOutput.js';
import {
  countsLine,
  csvFindings,
  csvHeader,
  csvSheets,
  findingsTable,
  passLine,
  type ReconcileFormat,
  sheetsTable,
} from './reconcileFormats.js';

/**
 * `vcu-sync reconcile [--issuance ID] [--format table|json|csv]`: a reconciliation pass now (every
 * issuance, or one), then the open findings and the balance sheets, as `GET /v1/reconciliation`
 * shows them. Exit as `vcu-sync status` does: 0 no open finding above info, 1 open warnings,
 * 2 open critical; 3 nothing compared (no database, no server); 64 bad usage.
 */

/** Exit code when there is nothing to compare: no database, or no server to reach. */
export const EXIT_RECONCILE_UNAVAILABLE = 3;
/** Exit code of an --issuance that names no issuance (blank, or too long to be one). */
export const EXIT_RECONCILE_USAGE = 64;

/** The exit code of the open findings (pure): 2 any critical, 1 any warning, else 0. */
export function reconcileExitCode(counts: OpenCounts): 0 | 1 | 2 {
  return counts.critical > 0 ? 2 : counts.warning > 0 ? 1 : 0;
}

/** What a pass of the command runs on. */
export interface ReconcileRun {
  store: ScriptStore;
  settings: RuleSettings;
  now: () => number;
  /** Where opened and resolved findings go besides the change feed (the subscribers; default: none). */
  sink?: FindingSink | undefined;
}

/** Options of {@link runReconcileCommand}. */
export interface ReconcileCommandOptions extends Pick<CommandStreams, 'stdout'> {
  issuance: string | null;
  format: ReconcileFormat;
  /** Findings and sheets read per statement (default: the API's most, 1000). */
  pageSize?: number;
}

/**
 * How a format frames what it prints: its start, each page of each list (the first page of each is
 * printed even when empty; `printed` counts the items before it), its end.
 */
interface Printer {
  start(line: string): string;
  findings(page: readonly FindingView[], printed: number): string;
  sheets(page: readonly BalanceSheetView[], printed: number): string;
  end(counts: OpenCounts): string;
}

/** One JSON item of a streamed array: a comma before all but the first. */
const jsonItem = (value: unknown, index: number) => `${index === 0 ? '\n' : ',\n'}${JSON.stringify(value)}`;

const PRINTERS: Record<ReconcileFormat, Printer> = {
  table: {
    start: (line) => `${line}\n\n`,
    findings: (page, printed) => findingsTable(page, printed === 0),
    sheets: (page, printed) => `${printed === 0 ? '\n' : ''}${sheetsTable(page, printed === 0)}`,
    end: (counts) => `\n${countsLine(counts)}\n`,
  },
  // The API's page whole, `next` null: findings, then balances, then the counts.
  json: {
    start: () => '{"findings":[',
    findings: (page, printed) => page.map((f, i) => jsonItem(f, printed + i)).join(''),
    sheets: (page, printed) =>
      `${printed === 0 ? '\n],"balances":[' : ''}${page.map((s, i) => jsonItem(s, printed + i)).join('')}`,
    end: (counts) => `\n],"counts":${JSON.stringify(counts)},"next":null}\n`,
  },
  csv: {
    start: () => csvHeader(),
    findings: (page) => csvFindings(page),
    sheets: (page) => csvSheets(page),
    end: () => '',
  },
};

/** Writes `text`; a reader slower than the store (a pipe to gzip, a terminal) holds the next page back. */
type Write = (text: string) => Promise<void>;

function writerTo(stdout: NodeJS.WritableStream): Write {
  return async (text) => {
    if (text !== '' && !stdout.write(text)) await once(stdout, 'drain');
  };
}

/** Prints the open findings of `issuance` (null: all), page by page; how many. */
async function printFindings(
  read: Reader,
  issuance: string | null,
  printer: Printer,
  pageSize: number,
  write: Write,
): Promise<number> {
  const filter = { issuance, kind: null, severity: null, state: 'open' as const };
  let printed = 0;
  for (let after = 0; ; ) {
    const page = await readFindings(read, filter, after, pageSize);
    await write(printer.findings(page.findings, printed));
    printed += page.findings.length;
    after = page.findings.at(-1)?.id ?? after;
    if (!page.more) return printed;
  }
}

/** Prints the balance sheets of `issuance` (null: every issuance), page by page. */
async function printSheets(
  read: Reader,
  issuance: string | null,
  settings: SheetSettings,
  printer: Printer,
  pageSize: number,
  write: Write,
): Promise<void> {
  let printed = 0;
  for (let after = { i: '', u: '' }; ; ) {
    const page = await readSheets(read, issuance, after, pageSize, settings);
    await write(printer.sheets(page.sheets, printed));
    printed += page.sheets.length;
    after = page.last ?? after;
    if (!page.more) return;
  }
}

/** Runs a pass, prints the open findings and the balance sheets a page at a time; the exit code. */
export async function runReconcileCommand(run: ReconcileRun, opts: ReconcileCommandOptions): Promise<number> {
  const write = writerTo(commandOutput(opts).stdout);
  const printer = PRINTERS[opts.format];
  const pageSize = opts.pageSize ?? RECONCILE_LIMIT_MAX;
  const outcome = await runPass(
    { store: run.store, settings: run.settings, sink: run.sink, now: run.now },
    opts.issuance === null ? null : [opts.issuance],
  );
  const read: Reader = (s) => run.store.read(s);
  await write(printer.start(passLine(outcome, opts.issuance)));
  await printFindings(read, opts.issuance, printer, pageSize, write);
  const byteOrder = (await sortsInByteOrder(run.store)) ? '' : ' COLLATE "C"';
  const statuses = run.settings.reconcile.retire_match.statuses;
  await printSheets(read, opts.issuance, { statuses, byteOrder }, printer, pageSize, write);
  const counts = await readOpenCounts(read, opts.issuance);
  await write(printer.end(counts));
  return reconcileExitCode(counts);
}

/** Options of the CLI's entry. */
export interface ReconcileCliOptions {
  issuance?: string | undefined;
  format: ReconcileFormat;
  sink?: FindingSink;
}

/**
 * The CLI's entry: --issuance checked before the database is opened; a database that cannot be
 * opened (none yet, no server) is exit 3, so that 1 and 2 always mean findings.
 */
export async function runReconcileCli(config: Config, opts: ReconcileCliOptions): Promise<number> {
  const issuance = opts.issuance === undefined ? null : issuanceFilter(opts.issuance);
  if (issuance === undefined)
    throw new UserError(`reconcile: --issuance: ${BAD_ISSUANCE}`, EXIT_RECONCILE_USAGE);
  const log = createLogger({ level: config.log.level, fd: 2 });
  const opened = await openCommandStores(config, log).catch((err: unknown) => {
    throw err instanceof UserError ? new UserError(err.message, EXIT_RECONCILE_UNAVAILABLE) : err;
  });
  try {
    return await runReconcileCommand(
      {
        store: opened.stores.reconciliation,
        settings: { reconcile: config.reconcile, decisionWarnHours: config.status.decision_warn_hours },
        now: () => opened.ctx.clock.now(),
        // Findings the command opens or resolves are pushed to the subscribers as the daemon's are.
        sink: opts.sink ?? configuredFindingsSink(config),
      },
      { issuance, format: opts.format },
    );
  } finally {
    await opened.stores.close();
  }
}
