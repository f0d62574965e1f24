import { Writable } from 'node:stream';
import type { SqliteContext } from '../../src/app/sqliteStores.js';
import { isoAt } from '../../src/common/clock.js';
import { createLogger, type Logger } from '../../src/common/log.js';
import { operationReads } from '../../src/operations/operationsReads.js';
import type { OperationRow } from '../../src/operations/rows.js';
import { cancelOperation, insertOperations } from '../../src/operations/transitions.js';
import type { DispatcherOptions } from '../../src/outbox/dispatcherOptions.js';
import { type OutboxPause, PAUSE_KEY, pauseOf } from '../../src/outbox/pause.js';
import {
  answerExisting,
  type EnqueueResult,
  prepareInsert,
  type WakeDispatcher,
} from '../../src/outbox/prepareInsert.js';
import { stateChangeSinkOf } from '../../src/sqlite/changes.js';
import { driveSqlite } from '../../src/sqlite/commitQueue.js';
import type { Sqlite } from '../../src/sqlite/open.js';
import { SqliteOperationsStore, sqliteOutbox, sqliteOutboxHooks } from '../../src/sqlite/operationsStore.js';
import { runSqlite } from '../../src/sqlite/scripts.js';

/** Personal values that must never show up outside the body sent to the operator. */
export const PERSONAL = {
  originUserName: 'Alice Personalname',
  originUserEmail: 'alice.personal@example.org',
  originUserDocId: 'DOC-ALICE-778899',
  destinationUserName: 'Bob Personalname',
  destinationUserEmail: 'bob.personal@example.org',
  destinationUserDocId: 'DOC-BOB-112233',
} as const;

/** A valid notification of each kind, with `ref` and overrides. */
export function tokenization(ref: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    marketplaceId: 'mkt-1',
    operationType: 'Tokenization',
    marketplaceTransactionRef: ref,
    unitId: 101,
    issuanceId: 7,
    transactionAmount: 10,
    transactionUnit: 'tCO2e',
    transactionTimestamp: '2026-01-02T03:04:05.678Z',
    ...extra,
  };
}

export function transfer(ref: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    ...tokenization(ref),
    operationType: 'Transfer',
    originWallet: '0xorigin',
    destinationWallet: '0xdest',
    ...PERSONAL,
    ...extra,
  };
}

export function retire(ref: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { ...tokenization(ref), operationType: 'retire', unitsRetirementNotes: 'offsetting 2025', ...extra };
}

export function detokenization(ref: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { ...tokenization(ref), operationType: 'Detokenization', unitsAccountDestinationID: 4242, ...extra };
}

/** A logger whose every line is kept, to check what reached the log. */
export function capturingLogger(level = 'debug'): { log: Logger; lines: string[] } {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk, _enc, cb) {
      lines.push(String(chunk));
      cb();
    },
  });
  const log = createLogger({ level, destination });
  return { log, lines };
}

/** Throws naming the personal value found in any of the texts. */
export function assertNoPersonalData(texts: readonly string[]): void {
  for (const text of texts) {
    for (const value of Object.values(PERSONAL)) {
      if (text.includes(value)) throw new Error(`personal value ${value} leaked into: ${text.slice(0, 300)}`);
    }
  }
}

/** Polls `check` until it is true, failing after `timeoutMs` with `what`. */
export async function until(what: string, check: () => boolean, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/**
 * Cancels a queued operation at once, synchronously (fixtures built inside a transaction or a
 * synchronous callback): the store's own statement, with its feed row and deliveries. The CLI and
 * the API cancel through outbox/manage.ts.
 */
export function cancelQueued(ctx: Pick<SqliteContext, 'database' | 'clock'>, ref: string): void {
  const { sqlite } = ctx.database;
  sqlite.transaction(() => {
    const row = operationByRef(sqlite, ref);
    const now = isoAt(ctx.clock.now());
    if (
      !row ||
      !driveSqlite(
        sqlite,
        cancelOperation({ id: row.id, ref, from: row.state }, now, stateChangeSinkOf(sqlite)),
      )
    )
      throw new Error(`cannot cancel ${ref}`);
  })();
}

/** The stored row of `ref`, read now. */
export function operationByRef(sqlite: Sqlite, ref: string): OperationRow | undefined {
  return runSqlite(sqlite, operationReads.byRef(ref)).rows[0] as OperationRow | undefined;
}

type EnqueueContext = Pick<SqliteContext, 'database' | 'clock' | 'config'>;

/**
 * Queues one notification at once, synchronously, on the context's file (a test's seed, statement
 * by statement as the transitions write it); the daemon and the CLI queue through OutboxAccess.
 */
export function enqueueOperation(ctx: EnqueueContext, input: unknown, wake?: WakeDispatcher): EnqueueResult {
  const prepared = prepareInsert(ctx, input);
  if ('errors' in prepared) return prepared;
  const { sqlite } = ctx.database;
  const now = isoAt(ctx.clock.now());
  const [row] = driveSqlite(sqlite, insertOperations([prepared], now, stateChangeSinkOf(sqlite)));
  if (!row) return answerExisting(prepared, operationByRef(sqlite, prepared.ref));
  wake?.();
  return { status: 201, row };
}

/** Queues one notification as the API does: in the connection's group commit. */
export function enqueueOperationGrouped(
  ctx: EnqueueContext,
  input: unknown,
  wake?: WakeDispatcher,
): Promise<EnqueueResult> {
  return sqliteOutbox(ctx, ctx.database.sqlite, { grouped: true }).enqueue(input, wake);
}

/** The dispatcher's seams on the context's file, as the SQLite daemon wires them. */
export function sqliteDispatcher(
  ctx: Pick<SqliteContext, 'database'>,
): Pick<DispatcherOptions, 'store' | 'hooks'> {
  const { sqlite } = ctx.database;
  return { store: new SqliteOperationsStore(sqlite), hooks: sqliteOutboxHooks(sqlite) };
}

/** The dispatcher's pause record as stored, read now. */
export function readPause(sqlite: Sqlite): OutboxPause | null {
  const row = sqlite.prepare('SELECT value, updated_at FROM daemon_state WHERE key = ?').get(PAUSE_KEY);
  return pauseOf(row as { value: string; updated_at: string } | undefined);
}
