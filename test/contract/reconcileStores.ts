import type { Config } from '../../src/config/config.js';
import { loadConfig } from '../../src/config/config.js';
import { type ReconcileSettings, reconcileSchema } from '../../src/config/configReconcile.js';
import { addCustodyIds as addDeposit } from '../../src/inbox/eventStore.js';
import type { MirrorBackend } from '../../src/mirror/backend.js';
import { startRun } from '../../src/mirror/backend.js';
import { emptyCounts } from '../../src/mirror/bookkeeping.js';
import { custodyResources, listResources, type TableDef } from '../../src/mirror/resources.js';
import { addCustodyIds, endCustodyId } from '../../src/mirror/statements.js';
import type { OperationsStore } from '../../src/operations/storeSeam.js';
import { pgBackend } from '../../src/postgres/mirror.js';
import type { PgDatabase } from '../../src/postgres/open.js';
import { PgOperationsStore } from '../../src/postgres/operationsStore.js';
import { postgresScriptStore } from '../../src/postgres/scripts.js';
import { type FindingNotice, type PassOutcome, runPass } from '../../src/reconcile/pass.js';
import type { FindingRow } from '../../src/reconcile/reconcileStatements.js';
import { generateIssuance, generateUnit } from '../../src/simulator/generate.js';
import { commitQueueFor } from '../../src/sqlite/commitQueue.js';
import { sqliteBackend } from '../../src/sqlite/mirror.js';
import { SqliteOperationsStore } from '../../src/sqlite/operationsStore.js';
import { appendFeed, run, type ScriptStore } from '../../src/store/script.js';
import { type Sql, sql } from '../../src/store/sql.js';
import { testContext } from '../helpers/context.js';

/**
 * The reconciliation's store on either store, SQLite (a temp file) or PostgreSQL, and `Books`: the
 * rows a pass reads, written through the real writers (the operations store's insert, claim,
 * settle and decision; the mirror store's batches and custody ends; the custody sync's and the
 * inbox's `custody_ids` statements), so a case reads the same on both.
 */

export interface ReconcileStoreUnderTest {
  kind: 'sqlite' | 'postgres';
  scripts: ScriptStore;
  operations: OperationsStore;
  backend: MirrorBackend;
  config: Config;
  close(): Promise<void>;
}

export function sqliteReconcileStore(): ReconcileStoreUnderTest {
  const ctx = testContext();
  const sqlite = ctx.database.sqlite;
  return {
    kind: 'sqlite',
    scripts: commitQueueFor(sqlite),
    operations: new SqliteOperationsStore(sqlite),
    backend: sqliteBackend(sqlite),
    config: ctx.config,
    close: async () => ctx.dispose(),
  };
}

const PG_TABLES = [
  'outbox',
  'outbox_attempts',
  'changes',
  'deliveries',
  'reconciliation_ledger',
  'reconciliation_findings',
  'issuances',
  'unit_operations',
  'custody_issuances',
  'custody_units',
  'custody_ids',
  'sync_runs',
  'sync_seen',
  // The ledger catch-up's mark (reconcile/pass.ts) must not outlive the outbox's ids.
  'daemon_state',
];

/** PostgreSQL's, on the shared database of a test file, emptied first. */
export async function postgresReconcileStore(db: PgDatabase): Promise<ReconcileStoreUnderTest> {
  await db.pool.query(`TRUNCATE ${PG_TABLES.join(', ')} RESTART IDENTITY CASCADE`);
  return {
    kind: 'postgres',
    scripts: postgresScriptStore(db.pool),
    operations: new PgOperationsStore(db.pool),
    backend: pgBackend(db.pool),
    config: loadConfig({ env: {}, overrides: {} }),
    close: async () => {},
  };
}

const OWNER = 'reconcile-test';

/** The default `[reconcile]` settings with `retire_match` changed as given. */
export function reconcileSettings(
  retireMatch: Partial<ReconcileSettings['retire_match']> = {},
  decisionWarnHours = 24,
): { reconcile: ReconcileSettings; decisionWarnHours: number } {
  return { reconcile: reconcileSchema.parse({ retire_match: retireMatch }), decisionWarnHours };
}

/** An operation as the marketplace reports it. */
export interface Reported {
  ref: string;
  type: 'Tokenization' | 'Transfer' | 'Retire' | 'Detokenization';
  issuanceId?: string;
  unitId?: string;
  amount: number | string;
  /** `transactionUnit` (absent: none sent). */
  unit?: string;
}

const GEN = { seed: 29, projects: 1, issuances: 1, units: 1 };

/** A finding row as a case reads it (times ISO, kg as numbers). */
export type FindingRead = FindingRow;

/** The books on one store: the writers a case uses, a pass, and the reads of what it recorded. */
export class Books {
  private runId: number | null = null;
  private position = 0;
  private readonly ids = new Map<string, number>();
  /** Every notice the passes handed their sink, in order. */
  readonly sunk: FindingNotice[] = [];

  constructor(
    readonly s: ReconcileStoreUnderTest,
    public settings = reconcileSettings(),
  ) {}

  /** Queues an operation (state `queued`, created at `at`); its outbox id. */
  async report(op: Reported, at: string): Promise<number> {
    const body: Record<string, unknown> = {
      marketplaceTransactionRef: op.ref,
      operationType: op.type,
      transactionAmount: op.amount,
    };
    if (op.issuanceId !== undefined) body.issuanceId = op.issuanceId;
    if (op.unitId !== undefined) body.unitId = op.unitId;
    if (op.unit !== undefined) body.transactionUnit = op.unit;
    const [row] = await this.s.operations.insert(
      [
        {
          ref: op.ref,
          operationType: op.type,
          orderKey: null,
          body: JSON.stringify(body),
          hash: `h-${op.ref}`,
        },
      ],
      at,
    );
    if (!row) throw new Error(`ref ${op.ref} already queued`);
    this.ids.set(op.ref, row.id);
    return row.id;
  }

  /** Sends every queued row and has the operator accept it at `at`. */
  async acceptAll(at: string): Promise<void> {
    const claimed = await this.s.operations.claim({ owner: OWNER, now: at, leaseUntil: at, limit: 1000 });
    for (const row of claimed) {
      const claim = { id: row.id, ref: row.marketplaceTransactionRef, owner: OWNER, now: at };
      const attempt = { startedAt: at, durationMs: 1, statusCode: 202, error: null };
      await this.s.operations.settle(claim, attempt, { to: 'accepted', response: '{}', status: 202 });
    }
  }

  /** The operator's decision on an accepted operation, at `at`. */
  async decide(ref: string, decision: 'approved' | 'rejected', at: string): Promise<void> {
    const id = await this.idOf(ref);
    const done = await this.s.operations.recordDecision({ id, ref, decision, reason: null, now: at });
    if (!done) throw new Error(`decision on ${ref} refused`);
  }

  /** Reported, accepted and approved (the decision at `decidedAt`, default `at`). */
  async approved(op: Reported, at: string, decidedAt = at): Promise<void> {
    await this.report(op, at);
    await this.acceptAll(at);
    await this.decide(op.ref, 'approved', decidedAt);
  }

  private async run(): Promise<number> {
    this.runId ??= await startRun(this.s.backend.db, 'books', 'full', 'manual', T0, null);
    return this.runId;
  }

  private async write(def: TableDef, value: Record<string, unknown>, positioned: boolean): Promise<void> {
    const runId = await this.run();
    await this.s.backend
      .store(def, () => T0)
      .commitBatch({
        runId,
        records: [{ value, position: positioned ? this.position++ : null }],
        trackSeen: false,
        checkpoint: null,
        counts: emptyCounts(),
      });
  }

  /** The operator's public issuance `id` with `issuanceAmount` tonnes. */
  async issuance(id: string, amountT: number): Promise<void> {
    const record = { ...generateIssuance(GEN, 0), issuanceId: id, issuanceAmount: amountT };
    await this.write(listResources(this.s.config).issuances, record, false);
  }

  /** An entry of the public units log. */
  async logEntry(id: string, issuanceId: string, quantityT: number, status = 'Retired'): Promise<void> {
    const record = {
      ...generateUnit(GEN, 0),
      unitsOperationID: id,
      unitsIssuanceID: issuanceId,
      unitsQuantity: quantityT,
      unitsStatus: status,
    };
    await this.write(listResources(this.s.config).units, record, true);
  }

  /** A custody read of issuance `id` (its amount in tonnes) or unit `id`: held. */
  async custodyRead(kind: 'issuances' | 'units', id: string, issuanceId = id): Promise<void> {
    const def = custodyResources(this.s.config).find((r) => r.kind === kind);
    if (!def) throw new Error(kind);
    const record =
      kind === 'issuances'
        ? { ...generateIssuance(GEN, 0), issuanceId: id }
        : { ...generateUnit(GEN, 0), unitsOperationID: id, unitsIssuanceID: issuanceId };
    await this.write(def, record, false);
  }

  /** A custody read answered 404 at `at`: the id left custody. */
  async custodyEnded(kind: 'issuances' | 'units', id: string, at: string): Promise<void> {
    const def = custodyResources(this.s.config).find((r) => r.kind === kind);
    if (!def) throw new Error(kind);
    await this.s.backend.store(def, () => at).endCustody(await this.run(), kind, id, emptyCounts());
  }

  /** An id named in custody by the configuration or a Tokenization (`custody_ids`), not read yet. */
  async named(kind: 'issuances' | 'units', id: string, source: 'config' | 'outbox', at: string) {
    await this.exec(addCustodyIds(at, [{ kind, id, source }]));
  }

  /** The custody sync saw a named id leave custody at `at`. */
  async namedEnded(kind: 'issuances' | 'units', id: string, at: string): Promise<void> {
    await this.exec(endCustodyId(kind, id, at));
  }

  /** A custody deposit confirmed by webhook at `at`, as the inbox records it. */
  async deposit(kind: 'issuances' | 'units', id: string, at: string): Promise<void> {
    const statement = addDeposit([[kind, id]], at);
    if (statement) await this.exec(statement);
  }

  private async exec(statement: Sql): Promise<void> {
    await this.s.scripts.transaction(
      (function* () {
        yield* run(statement);
      })(),
    );
  }

  /** One pass over `scope` at `now` (ISO); the notices it raised go to `sunk` too. */
  async pass(now: string, scope: readonly string[] | null = null): Promise<PassOutcome> {
    const sunk = this.sunk;
    return runPass(
      {
        store: this.s.scripts,
        settings: this.settings,
        now: () => Date.parse(now),
        sink: (notices) =>
          // A script that writes nothing: it keeps what the pass hands its subscribers.
          (function* () {
            yield* appendFeed([]);
            sunk.push(...notices);
          })(),
      },
      scope,
    );
  }

  /** The outbox id of a reported operation. */
  async idOf(ref: string): Promise<number> {
    const id = this.ids.get(ref);
    if (id === undefined) throw new Error(`no operation ${ref}`);
    return id;
  }

  /** The ledger's amounts (kg, null: unreadable), in outbox order. */
  async ledgerAmounts(): Promise<Array<number | null>> {
    const rows = await this.s.scripts.read<{ amount_kg: number | null }>(
      sql`SELECT amount_kg FROM reconciliation_ledger ORDER BY outbox_id`,
    );
    return rows.map((r) => (r.amount_kg === null ? null : Number(r.amount_kg)));
  }

  /** Every finding row, by id. */
  async findings(): Promise<FindingRead[]> {
    const rows = await this.s.scripts.read<FindingRead>(
      sql`SELECT id, kind, subject, subject_id, issuance_id, unit_id, ref, severity, expected_kg, found_kg,
                 detail, first_seen_at, last_seen_at, resolved_at
            FROM reconciliation_findings ORDER BY id`,
    );
    return rows.map((r) => ({
      ...r,
      id: Number(r.id),
      expected_kg: r.expected_kg === null ? null : Number(r.expected_kg),
      found_kg: r.found_kg === null ? null : Number(r.found_kg),
    }));
  }

  /** The change feed's reconciliation rows, as `record_id kind`, in order. */
  async feed(): Promise<string[]> {
    const rows = await this.s.scripts.read<{ record_id: string; kind: string }>(
      sql`SELECT record_id, kind FROM changes WHERE resource = 'reconciliation_findings' ORDER BY seq`,
    );
    return rows.map((r) => `${r.record_id} ${r.kind}`);
  }
}

/** The time the mirror's rows are written at (their own times do not matter to a pass). */
export const T0 = '2026-03-01T00:00:00.000Z';

/** `T0` plus `hours`, ISO. */
export const hoursAfter = (hours: number, from = T0) =>
  new Date(Date.parse(from) + hours * 3_600_000).toISOString();
