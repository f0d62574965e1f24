import type pg from 'pg';
import {
  type ClaimedRow,
  type ClaimForm,
  claimChanges,
  nextClaimForm,
  sharedClaimIn,
} from '../operations/claim.js';
import type { StateChange, StateChangeSink } from '../operations/effects.js';
import type { OperationRow } from '../operations/rows.js';
import { stateChanged } from '../operations/stateChanged.js';
import type { ClaimParams } from '../operations/storeSeam.js';
import type { Sql } from '../store/sql.js';
import { inlined } from './inline.js';
import { type BeginAnswer, inPgTransaction } from './open.js';
import { drivePostgres, ROW_TYPES } from './scripts.js';
import {
  CLAIM_PLAN_SQL,
  lockAndNameSql,
  lockHeldRows,
  parseLocked,
  type SettleValues,
  settleMany,
} from './settleSql.js';

/** The claim's pinned plan, where the tests and tools have found it. */
export { CLAIM_PLAN_SQL } from './settleSql.js';

/**
 * The dispatcher's settles and claims on PostgreSQL, grouped: what is submitted while a group's
 * transaction runs goes into the next one, so a settle, the refill claim submitted beside it and
 * their neighbours share one transaction (one statement per kind of work, one feed append, one
 * commit) rather than a transaction each. SQLite's group commit (sqlite/commitQueue.ts) does the same
 * for its fsync; here it is round trips and the feed lock, which every writer waits for in turn.
 * As there, the group is atomic: if its transaction fails, every job in it fails (the rows' leases
 * run out and they are claimed again: at-least-once, never lost).
 */

/** A settle waiting for the next group. */
export interface SettleJob extends SettleValues {
  kind: 'settle';
  resolve(moved: boolean): void;
  reject(err: unknown): void;
}

/** A claim waiting for the next group; its parameters are taken when the group runs. */
export interface ClaimJob {
  kind: 'claim';
  given: ClaimParams | (() => ClaimParams);
  resolve(rows: OperationRow[]): void;
  reject(err: unknown): void;
}

export type GroupJob = SettleJob | ClaimJob;

/**
 * Runs `flush` on the jobs submitted so far, one group at a time; jobs submitted meanwhile wait for
 * the next. A job submitted while nothing runs starts a group at the end of the current turn, so
 * the jobs of one turn (a settle and its refill) go together.
 */
export class GroupRunner {
  private queue: GroupJob[] = [];
  private running = false;

  constructor(private readonly flush: (jobs: GroupJob[]) => Promise<void>) {}

  submit(job: GroupJob): void {
    this.queue.push(job);
    if (this.running) return;
    this.running = true;
    queueMicrotask(() => void this.drain());
  }

  private async drain(): Promise<void> {
    while (this.queue.length > 0) {
      const jobs = this.queue;
      this.queue = [];
      try {
        await this.flush(jobs);
      } catch (err) {
        // A job settled before the failure keeps its answer (a promise settles once).
        for (const job of jobs) job.reject(err);
      }
    }
    this.running = false;
  }
}

/**
 * One claim statement for several claims of one owner: each claim's share of the rows it returned,
 * oldest first, in the order the claims were submitted, each up to its own limit.
 */
export function shareClaimed<R extends { id: number }>(rows: readonly R[], limits: readonly number[]): R[][] {
  const sorted = [...rows].sort((a, b) => a.id - b.id);
  let next = 0;
  return limits.map((limit) => {
    const share = sorted.slice(next, next + Math.max(0, limit));
    next += share.length;
    return share;
  });
}

/** Claims grouped by owner, in submission order: one claim statement each. */
export function claimsByOwner(
  claims: ReadonlyArray<{ job: ClaimJob; params: ClaimParams }>,
): Array<Array<{ job: ClaimJob; params: ClaimParams }>> {
  const byOwner = new Map<string, Array<{ job: ClaimJob; params: ClaimParams }>>();
  for (const claim of claims) {
    const group = byOwner.get(claim.params.owner);
    if (group) group.push(claim);
    else byOwner.set(claim.params.owner, [claim]);
  }
  return [...byOwner.values()];
}

/**
 * Rows a group settled accepted with no webhook event stored for them: their `afterAccepted`
 * (postgres/outboxHooks.ts) has nothing to mask or apply, and skips its transaction. Bounded: the
 * oldest entries go first (an entry lost only costs that transaction).
 */
export class QuietAccepted {
  private readonly ids = new Set<number>();

  constructor(private readonly cap = 4_096) {}

  add(id: number): void {
    this.ids.add(id);
    if (this.ids.size > this.cap) this.ids.delete(this.ids.values().next().value as number);
  }

  /** Whether `id` was settled quiet; forgets it either way. */
  take(id: number): boolean {
    return this.ids.delete(id);
  }
}

/** A settle whose row another transaction holds: tried again (settleDurably), the row untouched. */
export class RowLockedError extends Error {
  /** PostgreSQL's lock_not_available, as a timed-out lock would report. */
  readonly code = '55P03';
  constructor(id: number) {
    super(`outbox row ${id} is locked by another transaction`);
    this.name = 'RowLockedError';
  }
}

/** What a group's transaction did: the settled rows moved, each claim's rows. */
interface GroupOutcome {
  moved: Set<number>;
  /** Of the rows moved to accepted, those with no webhook event stored for their ref. */
  quiet: Set<number>;
  shares: Map<ClaimJob, OperationRow[]>;
  /** Per claim statement: the rows it asked for and how many it found claimable (claim.ts nextClaimForm). */
  claimed: Array<{ asked: number; free: number }>;
}

/** A group's claims, one per owner, with their parameters taken (the claim's time and lease). */
interface OwnerClaim extends ClaimParams {
  group: Array<{ job: ClaimJob; params: ClaimParams }>;
}

/** A group's work: its settles by step, its claims by owner (taking each claim's parameters now). */
function planGroup(settles: readonly SettleJob[], claims: readonly ClaimJob[]) {
  const steps = settleSteps(settles);
  const taken = claims.map((job) => ({
    job,
    params: typeof job.given === 'function' ? job.given() : job.given,
  }));
  // One statement for each owner's claims, at the first one's time and lease; a claim with no room
  // left (claimAhead.ts) asks for nothing and gets no statement.
  const owners: OwnerClaim[] = claimsByOwner(taken).map((group) => ({
    group,
    ...group[0]!.params,
    limit: group.reduce((sum, c) => sum + c.params.limit, 0),
  }));
  return { steps, owners, asking: owners.filter((o) => o.limit > 0) };
}

/** Settles grouped by the step they take, in a fixed order; steps with none left out. */
function settleSteps(settles: readonly SettleJob[]) {
  return (['accepted', 'failed', 'queued'] as const)
    .map((to) => ({ to, jobs: settles.filter((j) => j.step.to === to) }))
    .filter((step) => step.jobs.length > 0);
}

type GroupPlan = ReturnType<typeof planGroup>;

/**
 * A group's first message, one round trip: BEGIN; with claims, their plan pinned (see
 * {@link CLAIM_PLAN_SQL}); with settles, their rows locked and named ({@link lockAndNameSql}: ids
 * written in, integers), then the settles of the rows it took (one statement per step, each its
 * own snapshot, taken once the lock's statement is done: see {@link EARLY_EVENTS}), then the claims
 * (one statement per owner, after the settles, so a refill sees the rows they free: a settled
 * row's next one on its key is claimed in the settle's own transaction). Values written in as
 * literals (./inline.ts). The feed's append travels with the COMMIT, the second and last.
 */
function groupMessage(ids: readonly number[], plan: GroupPlan, form: ClaimForm): pg.QueryConfig {
  const parts = ['BEGIN'];
  if (plan.asking.length > 0) parts.push(CLAIM_PLAN_SQL);
  if (ids.length > 0) {
    parts.push(lockAndNameSql(ids.map((id) => String(Math.trunc(id))).join(',')));
    for (const step of plan.steps) parts.push(inlined(settleMany(step.to, step.jobs, true)));
  }
  for (const { now, owner, leaseUntil, limit } of plan.asking)
    parts.push(inlined(sharedClaimIn(form)({ now, owner, leaseUntil, limit })));
  return { text: parts.join(';\n'), types: ROW_TYPES };
}

/** Runs `statements` as one simple-protocol message (./inline.ts); one result per statement. */
async function runTogether(client: pg.ClientBase, statements: readonly Sql[]): Promise<pg.QueryResult[]> {
  if (statements.length === 0) return [];
  return asResults(
    (await client.query({ text: statements.map(inlined).join(';\n'), types: ROW_TYPES })) as BeginAnswer,
  );
}

const asResults = (answer: BeginAnswer): pg.QueryResult[] => (Array.isArray(answer) ? answer : [answer]);

/** The rows each settle statement moved, and which of them were accepted quiet (no webhook event). */
function readSettled(
  steps: ReturnType<typeof settleSteps>,
  results: readonly pg.QueryResult[],
  into: Pick<GroupOutcome, 'moved' | 'quiet'>,
): void {
  steps.forEach((step, i) => {
    for (const { id, early } of results[i]!.rows as Array<{ id: number; early: boolean }>) {
      into.moved.add(id);
      if (step.to === 'accepted' && !early) into.quiet.add(id);
    }
  });
}

/**
 * After the first message ({@link groupMessage}, answered in `begun`): the settles whose rows were
 * held elsewhere and came free within the wait ({@link lockHeldRows}) settled now, then every state
 * change at once (its feed rows travel with the COMMIT). Returns the rows this transaction holds.
 */
async function groupWrites(
  client: pg.ClientBase,
  begun: BeginAnswer,
  settles: readonly SettleJob[],
  plan: GroupPlan,
  sink: StateChangeSink | undefined,
): Promise<GroupOutcome & { locked: Set<number> }> {
  const results = asResults(begun);
  let at = plan.asking.length > 0 ? 2 : 1;
  const lockedFirst = new Set<number>();
  const moved = new Set<number>();
  const quiet = new Set<number>();
  if (settles.length > 0) {
    for (const id of parseLocked((results[at++]!.rows[0] as { locked?: string }).locked)) lockedFirst.add(id);
    readSettled(plan.steps, results.slice(at), { moved, quiet });
    at += plan.steps.length;
  }
  const ids = settles.map((j) => j.claim.id);
  const locked = await lockHeldRows(client, ids, new Set(lockedFirst));
  const late = settleSteps(settles.filter((j) => locked.has(j.claim.id) && !lockedFirst.has(j.claim.id)));
  const lateResults = await runTogether(
    client,
    late.map((step) => settleMany(step.to, step.jobs, false)),
  );
  readSettled(late, lateResults, { moved, quiet });
  const changes: StateChange[] = settles
    .filter((j) => moved.has(j.claim.id))
    .map((j) => ({ ref: j.claim.ref, from: 'sending', to: j.step.to, at: j.claim.now }));
  const shares = new Map<ClaimJob, OperationRow[]>();
  const claimed: GroupOutcome['claimed'] = [];
  for (const o of plan.owners) {
    const asked = plan.asking.indexOf(o);
    const rows = asked < 0 ? [] : (results[at + asked]!.rows as ClaimedRow[]);
    if (asked >= 0) claimed.push({ asked: o.limit, free: Number(rows[0]?.free_heads ?? rows.length) });
    const split = shareClaimed(
      rows,
      o.group.map((c) => c.params.limit),
    );
    o.group.forEach((c, i) => {
      const share = split[i]!;
      changes.push(...claimChanges(share, o.now));
      shares.set(
        c.job,
        share.map(({ from_state: _, free_heads: __, ...row }) => row),
      );
    });
  }
  await drivePostgres(client, stateChanged(changes, sink));
  return { locked, moved, quiet, shares, claimed };
}

/**
 * The form of a store's claims: fixed, or `adaptive` (each claim's form chosen from the last one's
 * outcome, {@link nextClaimForm}).
 */
export interface ClaimFormState {
  form: ClaimForm;
  adaptive: boolean;
}

/**
 * Runs one group in one transaction of two round trips ({@link groupMessage}, then the feed's
 * append with the COMMIT) and answers its jobs. A row another transaction holds for long (one left
 * idle after updating it) is stepped over after a short wait: its settle alone fails
 * (RowLockedError) and is tried again, the rest of the group commits. Its claims are read in
 * `claimForm`'s form, which they then move on.
 */
export async function flushGroup(
  pool: pg.Pool,
  jobs: readonly GroupJob[],
  sink: StateChangeSink | undefined,
  quietAccepted: QuietAccepted,
  claimForm: ClaimFormState,
): Promise<void> {
  const settles = jobs.filter((j): j is SettleJob => j.kind === 'settle');
  const claims = jobs.filter((j): j is ClaimJob => j.kind === 'claim');
  const ids = settles.map((j) => j.claim.id);
  const plan = planGroup(settles, claims);
  const { locked, moved, quiet, shares, claimed } = await inPgTransaction(
    pool,
    (client, begun) => groupWrites(client, begun, settles, plan, sink),
    { begin: groupMessage(ids, plan, claimForm.form) },
  );
  if (claimForm.adaptive)
    for (const { asked, free } of claimed) claimForm.form = nextClaimForm(claimForm.form, asked, free);
  for (const id of quiet) quietAccepted.add(id);
  for (const j of settles) {
    if (locked.has(j.claim.id)) j.resolve(moved.has(j.claim.id));
    else j.reject(new RowLockedError(j.claim.id));
  }
  for (const j of claims) j.resolve(shares.get(j) ?? []);
}
