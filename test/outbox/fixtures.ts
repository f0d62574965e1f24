import { Writable } from 'node:stream';
import { isoAt } from '../../src/clock.js';
import type { AppContext } from '../../src/context.js';
import { createLogger, type Logger } from '../../src/log.js';
import { operationByRef } from '../../src/operations/reads.js';
import { cancelOperation } from '../../src/operations/transitions.js';
import { stateChangeSinkOf } from '../../src/sqlite/changes.js';
import { driveSqlite } from '../../src/sqlite/commitQueue.js';

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
export function cancelQueued(ctx: Pick<AppContext, 'database' | 'clock'>, ref: string): void {
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
