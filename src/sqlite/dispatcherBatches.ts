import type { DecisionEffect } from '../inbox/correlate.js';
import { acceptedDecisions } from '../inbox/correlate.js';
import { claimOperations } from '../operations/claim.js';
import type { Masker } from '../operations/personal.js';
import type { OperationRow } from '../operations/rows.js';
import type { ClaimParams } from '../operations/storeSeam.js';
import { type SettleCall, settleAttempts } from '../operations/transitions.js';
import { all, type Script, type TransactionOptions } from '../store/script.js';
import { sql } from '../store/sql.js';
import { stateChangeSinkOf } from './changes.js';
import { commitQueueFor, driveSqlite } from './commitQueue.js';
import type { Sqlite } from './open.js';
import { perHandle } from './perHandle.js';
import { TurnBatch } from './turnBatch.js';

/**
 * The dispatcher's per-row work on a SQLite handle, batched per group commit (./turnBatch.ts): the
 * settles of the sends answered in one turn, their rows' inbox side, and the refill claims they
 * make are three jobs per group, not three per row. Per handle: every store and hook on a
 * connection shares them, as they share its commit queue.
 */

/** A claim's parameters, taken when it runs (OperationsStore.claim). */
export type ClaimCall = () => ClaimParams;

/** A row just accepted, for its inbox side (InboxStore.afterAccepted). */
export interface AcceptedCall {
  op: { id: number; ref: string; mask: Masker };
  nowIso: string;
}

/**
 * Claims in one script: consecutive calls of one owner become one claim of their summed limits
 * (two candidate reads for the group instead of two per row), its rows dealt out in id order.
 */
function* claimsOf(calls: readonly ClaimCall[], sqlite: Sqlite): Script<OperationRow[][]> {
  const params = calls.map((call) => call());
  const dealt: OperationRow[][] = [];
  for (let i = 0; i < params.length; ) {
    const first = params[i]!;
    let end = i + 1;
    while (end < params.length && params[end]!.owner === first.owner) end++;
    const limits = params.slice(i, end).map((p) => p.limit);
    const total = limits.reduce((sum, n) => sum + n, 0);
    const rows = yield* claimOperations({ ...first, limit: total }, stateChangeSinkOf(sqlite), false);
    let next = 0;
    for (const limit of limits) {
      dealt.push(rows.slice(next, next + limit));
      next += limit;
    }
    i = end;
  }
  return dealt;
}

/** The refs among `refs` that any webhook event names (one indexed read for the group). */
function* refsWithEvents(refs: readonly string[]): Script<Set<string>> {
  const rows = yield* all<{ ref: string }>(sql`
    SELECT DISTINCT "marketplaceTransactionRef" AS ref FROM webhook_events
     WHERE "marketplaceTransactionRef" IN (SELECT value FROM json_each(${JSON.stringify(refs)}))`);
  return new Set(rows.map((r) => r.ref));
}

/**
 * The inbox side of rows just accepted: only a row some webhook event names has events to mask or
 * decisions to apply (acceptedDecisions reads and writes nothing else), so the rest cost one shared
 * read rather than three reads each.
 */
function* acceptedOf(calls: readonly AcceptedCall[], sqlite: Sqlite): Script<DecisionEffect[][]> {
  const named = yield* refsWithEvents(calls.map((c) => c.op.ref));
  const effects: DecisionEffect[][] = [];
  const sink = stateChangeSinkOf(sqlite);
  for (const { op, nowIso } of calls) {
    effects.push(named.has(op.ref) ? yield* acceptedDecisions(op, { now: nowIso, sink }) : []);
  }
  return effects;
}

/** A batch whose group script is `script` (each call alone: the same script for one). */
function batchOf<I, R>(
  sqlite: Sqlite,
  script: (calls: readonly I[], sqlite: Sqlite) => Script<R[]>,
  options: TransactionOptions,
): TurnBatch<I, R> {
  return new TurnBatch<I, R>(
    sqlite,
    commitQueueFor(sqlite),
    {
      many: (calls) => driveSqlite(sqlite, script(calls, sqlite)),
      one: (call) => driveSqlite(sqlite, script([call], sqlite))[0]!,
    },
    options,
  );
}

/**
 * How often a busy dispatcher's groups start, ms (TransactionOptions.groupSpacingMs). Each group
 * commit costs about as much again for its pages and locks as for its rows: draining 10,000
 * operations in groups of about 4 rows, a COMMIT cost the loop as much as every statement of its
 * rows together. A few milliseconds' worth per group (with the rows claimed ahead, so no send waits
 * for it: the SQLite stores' `claimAhead`) took the drain's CPU from about 225 to about 170 us a row
 * (docs/benchmarks.md, "Issue 30, eleventh round"). The first claim after a quiet spell does not wait.
 */
export const DISPATCHER_GROUP_SPACING_MS = 4;

/**
 * The dispatcher's claims, settles and releases go on once committed, without waiting for the
 * commit's fsync: a power loss that takes one back only sends its row again (at-least-once, as
 * after any crash). A send slot waiting for an fsync after each answer halved the drain rate
 * against a bare POST loop (an fsync here costs as much as the operator's answer). What others
 * learn of them still waits for it: feed readers are woken once it is durable (./changes.ts).
 * The inbox side of an accepted row likewise: the inbox's sweep applies it again.
 */
export const DISPATCHER_WORK: TransactionOptions = {
  durable: false,
  groupSpacingMs: DISPATCHER_GROUP_SPACING_MS,
};

/** The dispatcher's batches of a handle. */
export const dispatcherBatchesFor = perHandle((sqlite: Sqlite) => ({
  settles: batchOf<SettleCall, boolean>(
    sqlite,
    (calls) => settleAttempts(calls, stateChangeSinkOf(sqlite)),
    DISPATCHER_WORK,
  ),
  claims: batchOf<ClaimCall, OperationRow[]>(sqlite, claimsOf, DISPATCHER_WORK),
  accepted: batchOf<AcceptedCall, DecisionEffect[]>(sqlite, acceptedOf, DISPATCHER_WORK),
}));
