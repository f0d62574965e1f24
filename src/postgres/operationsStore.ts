import type pg from 'pg';
import type { AppContext } from '../context.js';
import { InboxStore } from '../inbox/inboxStore.js';
import type { ClaimForm } from '../operations/claim.js';
import type { StateChangeSink } from '../operations/effects.js';
import type { OperationRow } from '../operations/rows.js';
import { ScriptedOperationsStore } from '../operations/scriptedStore.js';
import type { AttemptRecord, Claim, ClaimParams, NewOperation, SettleStep } from '../operations/storeSeam.js';
import { insertOperations, releaseOwnedBy } from '../operations/transitions.js';
import { type OutboxAccess, outboxAccess } from '../outbox/access.js';
import { type OutboxHooks, outboxHooks } from '../outbox/hooks.js';
import { run, type Script } from '../store/script.js';
import { join, raw, sql, typed } from '../store/sql.js';
import { orderKeyLock } from './advisoryLocks.js';
import { postgresScriptStore } from './scripts.js';
import { type ClaimFormState, flushGroup, GroupRunner, QuietAccepted } from './settleGroup.js';

/**
 * The operations store on PostgreSQL, shared by several replicas: the transitions of
 * transitions.ts, as on SQLite, with what sharing the store asks for besides. The dispatcher's
 * claims and settles are grouped (settleGroup.ts: one transaction of few round trips for many), and
 * the claimants known dead are those whose liveness lock is free (liveness.ts).
 *
 * Order per order key across replicas: a row is claimable only when no older row of its key is
 * queued or sending (NOT EXISTS), and the claim is ONE statement (candidates FOR UPDATE SKIP
 * LOCKED, then the guarded UPDATE), so no claim lock is needed. Why concurrent claimers cannot take
 * two rows of one key: the statement's snapshot may be stale, but a stale older row can only look
 * MORE blocking than it is (queued or sending, not yet settled), so at most the oldest unsettled
 * row of a key is ever a candidate; two claimers racing for that row meet on its row lock (SKIP
 * LOCKED, and the re-check of the guard on the newest version drops a row another claim took).
 * The one move that unsettles an older row again, a person's retry of a failed row, lets it go
 * beside a newer one in flight on SQLite too. What the snapshot must not miss is an OLDER row not
 * committed yet: enqueues take a transaction lock per order key, so ids of one key are handed
 * out in commit order (else a claimer could see id 6 of a key committed while id 5 is in flight).
 * test/postgres/pgOperationsClaims.test.ts runs 8 claimers and checks no key is ever out twice.
 */

/** Options of {@link PgOperationsStore}. */
export interface PgOperationsStoreOptions {
  /** What each state change writes in its transaction besides the feed (effects.ts; default: nothing). */
  onStateChange?: StateChangeSink;
  /**
   * How claims read the queue: in id order (`walk`), by order key (`heads`), or each claim as the
   * last one's outcome calls for (operations/claim.ts nextClaimForm) (default: "adaptive").
   */
  claimForm?: ClaimForm | 'adaptive';
}

export class PgOperationsStore extends ScriptedOperationsStore {
  /** Where settles and claims wait for their group's transaction. */
  private readonly group: GroupRunner;
  /** Rows settled accepted with no webhook event for them (pgOutboxHooks' `quietAccepted`). */
  readonly quietAccepted = new QuietAccepted();
  private readonly claimFormState: ClaimFormState;

  /** The form the next claim reads the queue in (operations/claim.ts). */
  get claimForm(): ClaimForm {
    return this.claimFormState.form;
  }

  constructor(pool: pg.Pool, pgOptions: PgOperationsStoreOptions = {}) {
    super(postgresScriptStore(pool), { sink: () => pgOptions.onStateChange });
    const given = pgOptions.claimForm ?? 'adaptive';
    this.claimFormState =
      given === 'adaptive' ? { form: 'walk', adaptive: true } : { form: given, adaptive: false };
    this.group = new GroupRunner((jobs) =>
      flushGroup(pool, jobs, pgOptions.onStateChange, this.quietAccepted, this.claimFormState),
    );
  }

  /** Each order key's transaction lock first, in key order: ids of one key are handed out in commit order. */
  protected override inserting(ops: readonly NewOperation[], nowIso: string): Script<OperationRow[]> {
    return lockedInsert(ops, nowIso, this.sink);
  }

  override claim(given: ClaimParams | (() => ClaimParams)): Promise<OperationRow[]> {
    return new Promise((resolve, reject) => this.group.submit({ kind: 'claim', given, resolve, reject }));
  }

  override settle(claim: Claim, attempt: AttemptRecord, step: SettleStep): Promise<boolean> {
    return new Promise((resolve, reject) =>
      this.group.submit({ kind: 'settle', claim, attempt, step, resolve, reject }),
    );
  }

  /**
   * Hands back every row `owner` holds (one transaction). Only for an owner known dead: the
   * replica presence's sweep (presence.ts) calls it under that owner's liveness lock.
   */
  releaseOwner(owner: string, nowIso: string): Promise<Array<{ id: number; ref: string }>> {
    return this.scripts.transaction(releaseOwnedBy(owner, nowIso, this.sink));
  }
}

function* lockedInsert(
  ops: readonly NewOperation[],
  nowIso: string,
  sink: StateChangeSink | undefined,
): Script<OperationRow[]> {
  const keys = [...new Set(ops.flatMap((o) => (o.orderKey === null ? [] : [o.orderKey])))].sort();
  if (keys.length > 0)
    yield* run(
      sql`SELECT pg_advisory_xact_lock(${raw(orderKeyLock('k'))}) FROM (VALUES ${join(
        keys.map((k) => sql`(${typed(k, 'text')})`),
        ', ',
      )}) AS keys(k) ORDER BY k`,
    );
  return yield* insertOperations(ops, nowIso, sink);
}

/** The dispatcher's hooks on PostgreSQL: nothing to erase after a scrub (VACUUM reclaims the old versions). */
export function pgOutboxHooks(
  pool: pg.Pool,
  options: Pick<PgOperationsStoreOptions, 'onStateChange'> & {
    /**
     * The operations store's rows settled accepted with no webhook event stored for them
     * (settleGroup.ts): nothing to mask or apply, so no transaction (default: every row checks).
     */
    quietAccepted?: QuietAccepted;
  } = {},
): OutboxHooks {
  const scripts = postgresScriptStore(pool);
  const hooks = outboxHooks(scripts, new InboxStore(scripts, options), () => {});
  const quiet = options.quietAccepted;
  if (!quiet) return hooks;
  return {
    ...hooks,
    afterAccepted: async (row, nowIso, settled) => {
      if ((await settled.catch(() => false)) && quiet.take(row.id)) return [];
      return hooks.afterAccepted(row, nowIso, settled);
    },
  };
}

/** The outbox on PostgreSQL, as the commands (which never claim) and the API use it. */
export function pgOutbox(
  ctx: Pick<AppContext, 'clock' | 'config'>,
  pool: pg.Pool,
  options: PgOperationsStoreOptions,
): OutboxAccess {
  const store = new PgOperationsStore(pool, options);
  return outboxAccess(ctx, postgresScriptStore(pool), store, { wakeBeforeCommit: false });
}
