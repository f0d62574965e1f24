/**
 * The reconciliation bench's measuring process, apart from the seeding so its peak RSS is the
 * pass's own. Args: one JSON {@link PassJob}. Prints one JSON line ({@link PassReport}) last.
 * Modes: `measure` times, `runs` times each and interleaved, the ledger's first catch-up (after
 * emptying it), the bare reads (baseline), a full pass and a scoped pass; `rss` runs one full pass with the
 * ledger caught up, `rss-baseline` the bare reads once: each reports the process's peak RSS.
 */
import { performance } from 'node:perf_hooks';
import { reconcileSchema } from '../../../src/config/configReconcile.js';
import { openPostgres } from '../../../src/postgres/open.js';
import { postgresScriptStore } from '../../../src/postgres/scripts.js';
import { catchUpLedger, type PassDeps, runPass } from '../../../src/reconcile/pass.js';
import { LEDGER_MARK_KEY } from '../../../src/reconcile/reconcileStatements.js';
import { commitQueueFor } from '../../../src/sqlite/commitQueue.js';
import { openDatabase } from '../../../src/sqlite/open.js';
import type { ScriptStore } from '../../../src/store/script.js';
import { RETIRED_SPELLINGS, SEED_NOW } from '../lib/reconcileSeed.js';

export interface PassJob {
  mode: 'measure' | 'rss' | 'rss-baseline';
  dialect: 'sqlite' | 'postgres';
  /** The SQLite file or the PostgreSQL URL. */
  target: string;
  runs: number;
  /** The issuances of the scoped pass. */
  scope: string[];
}

export interface PassReport {
  baseline: number[];
  catchUp: number[];
  full: number[];
  scoped: number[];
  /** Rows the baseline read (ledger join, log retirements), to check both sides read the same books. */
  baselineRows: [number, number];
  /** What the last full pass saw. */
  operations: number;
  sheets: number;
  open: number;
  /** Findings opened by the first full pass, by kind. */
  openedByKind: Record<string, number>;
  /** Peak RSS of the process, MB. */
  peakRssMb: number;
}

/**
 * The bare reads a pass cannot do without: the ledger joined to the outbox states, the log's
 * retirements (by the spellings seeded, through the status index: no case folding to do).
 */
const BARE_LEDGER = `SELECT l.outbox_id, l.kind, l.issuance_id, l.unit_id, l.amount_kg, o.state,
    o."marketplaceTransactionRef" AS ref, o.created_at, o.accepted_at, o.decided_at
  FROM reconciliation_ledger l JOIN outbox o ON o.id = l.outbox_id`;
const BARE_RETIREMENTS = `SELECT "unitsOperationID" AS id, "unitsIssuanceID" AS issuance_id, "unitsQuantity" AS quantity
  FROM unit_operations WHERE _removed_at IS NULL AND "unitsStatus" IN (${RETIRED_SPELLINGS.map((s) => `'${s}'`).join(', ')})`;

interface Opened {
  store: ScriptStore;
  bareReads: () => Promise<[number, number]>;
  emptyLedger: () => Promise<void>;
  close: () => Promise<void>;
}

async function open(job: PassJob): Promise<Opened> {
  if (job.dialect === 'sqlite') {
    const { sqlite, close } = openDatabase(job.target, { migrate: false });
    return {
      store: commitQueueFor(sqlite),
      bareReads: async () => [
        sqlite.prepare(BARE_LEDGER).all().length,
        sqlite.prepare(BARE_RETIREMENTS).all().length,
      ],
      emptyLedger: async () => {
        // The catch-up's mark too (pass.ts): otherwise it would find every row read already.
        sqlite.exec(
          `DELETE FROM reconciliation_ledger; DELETE FROM daemon_state WHERE key = '${LEDGER_MARK_KEY}'`,
        );
      },
      close: async () => close(),
    };
  }
  const db = await openPostgres(job.target, { migrate: false, max: 4 });
  return {
    store: postgresScriptStore(db.pool),
    bareReads: async () => [
      (await db.pool.query(BARE_LEDGER)).rows.length,
      (await db.pool.query(BARE_RETIREMENTS)).rows.length,
    ],
    emptyLedger: async () => {
      await db.pool.query('DELETE FROM reconciliation_ledger');
      await db.pool.query('DELETE FROM daemon_state WHERE key = $1', [LEDGER_MARK_KEY]);
      await db.pool.query('VACUUM ANALYZE reconciliation_ledger');
    },
    close: () => db.close(),
  };
}

const seconds = async (work: () => Promise<unknown>) => {
  const start = performance.now();
  await work();
  return (performance.now() - start) / 1000;
};

async function main(): Promise<PassReport> {
  const job = JSON.parse(process.argv[2] ?? '{}') as PassJob;
  const opened = await open(job);
  const deps: PassDeps = {
    store: opened.store,
    settings: { reconcile: reconcileSchema.parse({}), decisionWarnHours: 24 },
    now: () => SEED_NOW,
  };
  const report: PassReport = {
    baseline: [],
    catchUp: [],
    full: [],
    scoped: [],
    baselineRows: [0, 0],
    operations: 0,
    sheets: 0,
    open: 0,
    openedByKind: {},
    peakRssMb: 0,
  };
  const full = async () => {
    const outcome = await runPass(deps, null);
    report.operations = outcome.operations;
    report.sheets = outcome.sheets;
    report.open = outcome.open;
    if (Object.keys(report.openedByKind).length === 0)
      for (const n of outcome.opened)
        report.openedByKind[n.finding.kind] = (report.openedByKind[n.finding.kind] ?? 0) + 1;
  };
  try {
    if (job.mode === 'rss') await full();
    else if (job.mode === 'rss-baseline') report.baselineRows = await opened.bareReads();
    else {
      for (let r = 0; r < job.runs; r++) {
        await opened.emptyLedger();
        report.catchUp.push(await seconds(() => catchUpLedger(opened.store, new Date().toISOString())));
        report.baseline.push(
          await seconds(async () => {
            report.baselineRows = await opened.bareReads();
          }),
        );
        report.full.push(await seconds(full));
        report.scoped.push(await seconds(() => runPass(deps, job.scope)));
      }
    }
  } finally {
    await opened.close();
  }
  report.peakRssMb = process.resourceUsage().maxRSS / 1024;
  return report;
}

main().then(
  (report) => {
    process.stdout.write(`${JSON.stringify(report)}\n`);
    process.exit(0);
  },
  (err: unknown) => {
    process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
    process.exit(1);
  },
);
