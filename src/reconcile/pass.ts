import { isoAt } from '../common/clock.js';
import { insertLedger } from '../operations/ledger.js';
import { ledgerEntryOf } from '../outbox/ledgerEntry.js';
import { all, appendFeed, run, type Script, type ScriptStore } from '../store/script.js';
import { feedOrderLock, reconcilePassLock } from '../store/sql.js';
import { balanceSheets, balancesOf } from './balances.js';
import { readInputs } from './facts.js';
import { type Finding, type FindingKind, type FindingSubject, findingKey } from './findingKinds.js';
import { decideFindings, type RuleSettings } from './findings.js';
import * as q from './reconcileStatements.js';
import { settleFindings } from './settleFindings.js';

/**
 * One reconciliation pass, the edge around the pure rules: catch the ledger up with the outbox,
 * read the scope's inputs, decide (findings.ts), and in one transaction record what changed, with
 * its change-feed rows and the subscribers' deliveries (through the sink the root hands down, so
 * this module never imports subscribers/).
 */

/** A finding opened (new, or back after it was resolved) or resolved, as the feed and the subscribers see it. */
export interface FindingNotice {
  id: number;
  event: 'reconciliation.finding' | 'reconciliation.resolved';
  finding: Finding;
  at: string;
}

/**
 * A notice as the log and the subscribers' body show it: ids, amounts, the sentence and the time
 * (a finding holds nothing personal).
 */
export function noticeView(n: FindingNotice) {
  const f = n.finding;
  return {
    id: n.id,
    kind: f.kind,
    severity: f.severity,
    subject: f.subject,
    subjectId: f.subjectId,
    issuanceId: f.issuanceId,
    unitId: f.unitId,
    ref: f.ref,
    expectedKg: f.expectedKg,
    foundKg: f.foundKg,
    detail: f.detail,
    at: n.at,
  };
}

/** Where notices go besides the feed (the subscribers' deliveries): run in the pass's transaction. */
export type FindingSink = (notices: readonly FindingNotice[]) => Script<void>;

export interface PassDeps {
  store: ScriptStore;
  settings: RuleSettings;
  sink?: FindingSink;
  /** The pass's time, ms. */
  now: () => number;
}

/** What a pass did. */
export interface PassOutcome {
  /** The issuances looked at (null: all). */
  scope: readonly string[] | null;
  operations: number;
  sheets: number;
  open: number;
  opened: FindingNotice[];
  resolved: FindingNotice[];
  /** When a time-bound condition may turn, by issuance ('' for what only a full pass looks at). */
  dueAt: Map<string, number>;
  /**
   * The issuances named by the outbox rows the ledger read in this pass, in its scope or not: the
   * caller re-evaluates those outside the scope (rows queued since it last looked).
   */
  ledgered: Set<string>;
}

/**
 * The reconciliation's writes are derived from what is stored: a power loss that takes one back
 * loses nothing the next pass does not write again, so they need not wait for their fsync (on
 * SQLite, the enqueues' group commits do not wait behind them).
 */
const DERIVED = { durable: false } as const;

/** Ledger rows read per statement while catching up. */
const CATCH_UP_PAGE = 2_000;
/**
 * How far below the mark to look again: ids a concurrent transaction took but committed later. Only
 * where processes write concurrently (PostgreSQL): on SQLite one writer at a time commits its ids in
 * order, and rescanning 10,000 outbox rows each round held the API's loop ~10-20 ms a second under
 * 500 enqueues/s (the enqueue p99 with the dispatcher paused).
 */
const LATE_COMMIT_SPAN = 10_000;

/**
 * Reads the bodies of outbox rows the ledger lacks (each once) and records their amounts; the
 * issuance ids they name, so that the caller re-evaluates them. Rows queued by this version carry
 * their entries; those of an older one may lie anywhere below them, so the scan starts at the mark
 * it left (reconcileStatements.ts, LEDGER_MARK_KEY), not at the newest entry. A database without a
 * mark (the first round after an upgrade) is scanned whole, once.
 */
export async function catchUpLedger(store: ScriptStore, at: string): Promise<Set<string>> {
  const touched = new Set<string>();
  // Read first: on SQLite every id up to it is committed, and the scan below sees them all.
  const head = Number((await store.read<{ id: number }>(q.outboxHead()))[0]?.id ?? 0);
  const marked = Number((await store.read<{ value: string }>(q.ledgerMark()))[0]?.value ?? 0);
  // A mark above the head: the outbox's ids started again (a database emptied by hand).
  const mark = Number.isSafeInteger(marked) && marked <= head ? marked : 0;
  const span = store.dialect.capabilities.sharedByProcesses ? LATE_COMMIT_SPAN : 0;
  let after = Math.max(0, mark - span);
  for (;;) {
    const rows = await store.read<{ id: number; body: string }>(q.unledgered(after, CATCH_UP_PAGE));
    const entries = rows.map((r) => ({ outboxId: Number(r.id), ...ledgerEntryOf(r.body) }));
    for (const e of entries) if (e.issuanceId !== null) touched.add(e.issuanceId);
    const done = rows.length < CATCH_UP_PAGE;
    const moveMark = done && head !== marked;
    if (entries.length > 0 || moveMark)
      await store.transaction(
        (function* () {
          for (let i = 0; i < entries.length; i += q.GROUP)
            yield* run(insertLedger(entries.slice(i, i + q.GROUP)));
          if (moveMark) yield* run(q.setLedgerMark(head, at));
        })(),
        DERIVED,
      );
    if (done) return touched;
    after = Number(rows[rows.length - 1]?.id);
  }
}

const asFinding = (r: q.FindingRow): Finding => ({
  kind: r.kind as FindingKind,
  subject: r.subject as FindingSubject,
  subjectId: r.subject_id,
  issuanceId: r.issuance_id,
  unitId: r.unit_id,
  ref: r.ref,
  severity: r.severity as Finding['severity'],
  expectedKg: r.expected_kg === null ? null : Number(r.expected_kg),
  foundKg: r.found_kg === null ? null : Number(r.found_kg),
  detail: r.detail,
});

/** Records the findings of a scope in one transaction; the notices it raised. */
function* record(
  scope: readonly string[] | null,
  current: readonly Finding[],
  at: string,
  sink: FindingSink | undefined,
): Script<{ opened: FindingNotice[]; resolved: FindingNotice[]; open: number }> {
  // Replicas' passes one at a time (where several share the store): each settles against the
  // rows the one before it committed. Finding ids are drawn only here, so they too are in commit order.
  yield* run(reconcilePassLock);
  const existing = yield* all<q.FindingRow>(q.scopeFindings(scope));
  if (scope !== null) {
    // And the rows of what is found now wherever they are (a unit's finding may carry another
    // issuance): to know a reopening from a finding already open.
    const about = new Map<string, { kind: string; subject: string; ids: string[] }>();
    for (const f of current) {
      const what = `${f.kind}\u0000${f.subject}`;
      const entry = about.get(what) ?? { kind: f.kind, subject: f.subject, ids: [] };
      entry.ids.push(f.subjectId);
      about.set(what, entry);
    }
    for (const { kind, subject, ids } of about.values())
      for (let i = 0; i < ids.length; i += q.GROUP)
        existing.push(
          ...(yield* all<q.FindingRow>(q.findingsAbout(kind, subject, ids.slice(i, i + q.GROUP)))),
        );
  }
  // A finding both in scope and among the subjects is read by several groups: once each.
  const unique = [...new Map(existing.map((r) => [Number(r.id), r])).values()];
  const inScope = new Set(scope ?? []);
  const settled = settleFindings(
    unique,
    current,
    (row) => scope === null || (row.issuance_id !== null && inScope.has(row.issuance_id)),
  );
  const opened: FindingNotice[] = [];
  for (let i = 0; i < settled.upsert.length; i += q.GROUP / 2) {
    const group = settled.upsert.slice(i, i + q.GROUP / 2);
    const ids = yield* all<{ id: number; kind: string; subject: string; subject_id: string }>(
      q.upsertFindings(group, at),
    );
    const idOf = new Map(ids.map((r) => [`${r.kind}\u0000${r.subject}\u0000${r.subject_id}`, Number(r.id)]));
    for (const f of group) {
      const id = idOf.get(findingKey(f));
      if (id !== undefined && settled.opening.has(findingKey(f)))
        opened.push({ id, event: 'reconciliation.finding', finding: f, at });
    }
  }
  for (let i = 0; i < settled.touch.length; i += q.GROUP)
    yield* run(q.touchFindings(settled.touch.slice(i, i + q.GROUP), at));
  const resolved: FindingNotice[] = [];
  for (let i = 0; i < settled.resolve.length; i += q.GROUP) {
    const group = settled.resolve.slice(i, i + q.GROUP);
    const done = new Set(
      (yield* all<{ id: number }>(
        q.resolveFindings(
          group.map((r) => r.id),
          at,
        ),
      )).map((r) => Number(r.id)),
    );
    for (const r of group)
      if (done.has(Number(r.id)))
        resolved.push({ id: Number(r.id), event: 'reconciliation.resolved', finding: asFinding(r), at });
  }
  const notices = [...opened, ...resolved];
  // The feed's lock is every writer's (settles, enqueues, webhooks, the mirror): taken here, after
  // the findings' writes, it is held for the feed rows and the deliveries alone. Taken first, it
  // was held across the pass's round trips and a 2,000-operation drain's settles waited behind it.
  yield* run(feedOrderLock);
  yield* appendFeed(
    notices.map((n) => ({
      resource: 'reconciliation_findings',
      recordId: String(n.id),
      kind: n.event === 'reconciliation.finding' ? 'finding' : 'resolved',
      at,
    })),
  );
  if (sink && notices.length > 0) yield* sink(notices);
  const open = unique.filter((r) => r.resolved_at === null).length + opened.length - resolved.length;
  return { opened, resolved, open };
}

/** One pass over `scope` (null: every issuance and unit): the ledger caught up, the findings recorded. */
export async function runPass(deps: PassDeps, scope: readonly string[] | null): Promise<PassOutcome> {
  const ledgered = await catchUpLedger(deps.store, isoAt(deps.now()));
  const now = deps.now();
  const inputs = await readInputs(
    (s) => deps.store.read(s),
    scope,
    deps.settings.reconcile.retire_match.statuses,
  );
  const sheets = balanceSheets(balancesOf(inputs.facts), inputs.side);
  const verdict = decideFindings(
    sheets,
    inputs.facts,
    inputs.retirements,
    inputs.deposits,
    deps.settings,
    now,
  );
  const at = isoAt(now);
  const recorded = await deps.store.transaction(record(scope, verdict.findings, at, deps.sink), DERIVED);
  return {
    scope,
    operations: inputs.facts.length,
    sheets: sheets.length,
    open: recorded.open,
    opened: recorded.opened,
    resolved: recorded.resolved,
    dueAt: verdict.dueAt,
    ledgered,
  };
}
