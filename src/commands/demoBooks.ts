import type { Books, JsonObject, Registry, Simulator } from '../simulator/index.js';
import { KEY_SPECS } from '../simulator/index.js';
import type { ScriptStore } from '../store/script.js';
import { limitRows, sql } from '../store/sql.js';
import { type DemoApi, waitUntil } from './demoApi.js';
import {
  BEYOND_RETIRE_T,
  type DemoPair,
  type DemoPlan,
  doubleTokenization,
  LOST_RETIRE_T,
  lostRetirement,
  planPairs,
  retireBeyond,
  SETUP_TOKENIZED_T,
  transferAfterDrop,
} from './demoOperations.js';

/**
 * The demo's dealings with the simulator's books (issue 29): which of its records the demo uses,
 * their deposit into custody, and the four inconsistencies injected once, each said on stdout with
 * the finding it should raise.
 */

/** Issuances looked at for the plan (the first ones), and unit operations scanned for one naming each. */
const CANDIDATE_ISSUANCES = 60;
const SCANNED_UNITS = 3000;
/** Approved operations read per statement while the books are rebuilt. */
const REPLAY_PAGE = 1000;
/** Longest wait for one step of an injection (an operation sent, a sync run). */
const STEP_MS = 15_000;

/**
 * The first issuances with their amounts and, for each, a unit operation of the public log naming
 * it: the demo's operations name records the operator has, as a marketplace's would.
 */
export function demoCandidates(registry: Registry): DemoPair[] {
  const unitOf = new Map<string, number>();
  const units = Math.min(SCANNED_UNITS, registry.count('units'));
  for (let i = 0; i < units; i++) {
    const id = KEY_SPECS.units.baseKey(i);
    const issuance = registry.get('units', id)?.unitsIssuanceID;
    if (typeof issuance === 'string' && !unitOf.has(issuance)) unitOf.set(issuance, id);
  }
  const out: DemoPair[] = [];
  const issuances = Math.min(CANDIDATE_ISSUANCES, registry.count('issuances'));
  for (let i = 0; i < issuances; i++) {
    const id = KEY_SPECS.issuances.baseKey(i);
    const amount = registry.get('issuances', id)?.issuanceAmount;
    const unitId = unitOf.get(String(id));
    if (typeof amount === 'number' && unitId !== undefined)
      out.push({ issuanceId: id, unitId, amountT: amount });
  }
  return out;
}

/**
 * A demo run again in its folder meets a new simulator: its books are rebuilt from the operations
 * the earlier runs' simulators approved, in the order they were queued, losing again the
 * retirements still found missing; so the earlier runs' consistent operations stay consistent.
 * Before the daemon starts, so its first syncs read the rebuilt registry. How many were booked.
 */
export async function replayBooks(store: ScriptStore, books: Books): Promise<number> {
  const lost = new Set(
    (
      await store.read<{ ref: string }>(
        sql`SELECT subject_id AS ref FROM reconciliation_findings
             WHERE kind = 'retirement-missing' AND subject = 'operation' AND resolved_at IS NULL`,
      )
    ).map((r) => r.ref),
  );
  let booked = 0;
  // In id order, a page at a time: the order they were sent in, as far as the simulator could tell.
  for (let after = 0; ; ) {
    const page = await store.read<{ id: number; ref: string; body: string }>(
      sql`SELECT id, "marketplaceTransactionRef" AS ref, body FROM outbox
           WHERE state = 'approved' AND id > ${after} ORDER BY id ${limitRows(REPLAY_PAGE)}`,
    );
    for (const row of page) {
      const notification = jsonObject(row.body);
      if (!notification) continue;
      if (lost.has(row.ref)) books.loseRetirements(1);
      if (books.onDecided(notification, 'approve')) booked++;
    }
    if (page.length < REPLAY_PAGE) return booked;
    after = Number(page[page.length - 1]?.id);
  }
}

/** A stored body as the simulator received it; null when it is not a JSON object. */
function jsonObject(body: string): JsonObject | null {
  try {
    const parsed: unknown = JSON.parse(body);
    return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)
      ? (parsed as JsonObject)
      : null;
  } catch {
    return null;
  }
}

/** The operator deposits every record of the plan into the marketplace's custody (signed webhooks); how many arrived. */
export async function depositPlan(sim: Simulator, plan: DemoPlan): Promise<number> {
  const sent = await Promise.all(
    planPairs(plan).map((p) =>
      sim.sendDepositWebhook({ issuanceId: String(p.issuanceId), unitIds: [String(p.unitId)] }),
    ),
  );
  return sent.filter((w) => w.delivered).length;
}

export interface InjectDeps {
  sim: Simulator;
  api: DemoApi;
  plan: DemoPlan;
  marketplaceId: string;
  /** The demo's enqueue (it reports a refusal itself). */
  enqueue: (body: Record<string, unknown>) => Promise<void>;
  /** Resolves when every enqueue in flight has been answered (the stream is held meanwhile). */
  enqueued: () => Promise<void>;
  out: (line: string) => void;
  /** The demo is stopping: the steps not begun are left out. */
  stopping: () => boolean;
  /** `reconcile.retire_window_hours`, for the lost retirement's line. */
  retireWindowHours: number;
}

const refOf = (body: Record<string, unknown>) => String(body.marketplaceTransactionRef);

/** The operator approves a Retire and leaves it out of its public log. */
async function loseOneRetirement(d: InjectDeps): Promise<void> {
  // Every earlier operation has reached the operator: the next retirement it approves is this one.
  await d.enqueued();
  await d.api.allSent(STEP_MS);
  const body = lostRetirement(d.plan, d.marketplaceId, new Date());
  d.sim.books.loseRetirements(1);
  await d.enqueue(body);
  const ref = refOf(body);
  const lost = await waitUntil(() => d.sim.books.view().lost.includes(ref), STEP_MS);
  d.out(
    lost
      ? `injected: a lost retirement: Retire ${ref} of ${LOST_RETIRE_T} t on issuance ${d.plan.lost.issuanceId} approved, left out of the operator's public units log (retirement-missing after ${d.retireWindowHours} h)`
      : `injected: a lost retirement: the operator did not lose Retire ${ref} within ${STEP_MS / 1000} s`,
  );
}

async function retireMoreThanTokenized(d: InjectDeps): Promise<void> {
  const body = retireBeyond(d.plan, d.marketplaceId, new Date());
  await d.enqueue(body);
  d.out(
    `injected: a retire beyond what was tokenized: Retire ${refOf(body)} of ${BEYOND_RETIRE_T} t on issuance ${d.plan.beyond.issuanceId}, which had ${SETUP_TOKENIZED_T} t tokenized (outstanding-negative)`,
  );
}

async function tokenizeTwice(d: InjectDeps): Promise<void> {
  const bodies = doubleTokenization(d.plan, d.marketplaceId, new Date());
  for (const body of bodies) await d.enqueue(body);
  d.out(
    `injected: a double tokenization: Tokenization of ${String(bodies[0]?.transactionAmount)} t reported twice (${bodies.map(refOf).join(', ')}) on issuance ${d.plan.doubled.issuanceId} of ${d.plan.doubled.amountT} t (over-issuance)`,
  );
}

async function dropCustody(d: InjectDeps): Promise<void> {
  const issuance = d.plan.dropped.issuanceId;
  d.sim.books.dropCustody({ issuances: [issuance] });
  // The mirror reads the custody data again and sees it end; what is reported after that is outside custody.
  const read = await d.api.syncAndWait('custody', STEP_MS);
  const body = transferAfterDrop(d.plan, d.marketplaceId, new Date());
  await d.enqueue(body);
  d.out(
    read
      ? `injected: custody dropped: the operator ended custody of issuance ${issuance} (read by a custody sync), then Transfer ${refOf(body)} was reported on it (not-in-custody)`
      : `injected: custody dropped: issuance ${issuance}, but no custody sync ended within ${STEP_MS / 1000} s; Transfer ${refOf(body)} reported on it`,
  );
}

/**
 * The four inconsistencies, each once, in turn (the caller holds its stream meanwhile, so the lost
 * retirement is the injected one). A stop requested meanwhile leaves the steps not begun out.
 */
export async function injectInconsistencies(d: InjectDeps): Promise<void> {
  for (const step of [loseOneRetirement, retireMoreThanTokenized, tokenizeTwice, dropCustody]) {
    if (d.stopping()) return;
    await step(d);
  }
}
