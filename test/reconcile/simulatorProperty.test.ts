import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isoAt } from '../../src/common/clock.js';
import { runSync } from '../../src/mirror/syncRun.js';
import { createDispatcherComponent } from '../../src/outbox/dispatcher.js';
import { runPass } from '../../src/reconcile/pass.js';
import { type Simulator, startSimulator } from '../../src/simulator/index.js';
import { commitQueueFor } from '../../src/sqlite/commitQueue.js';
import { sqliteBackend } from '../../src/sqlite/mirror.js';
import { SqliteOperationsStore } from '../../src/sqlite/operationsStore.js';
import { sql } from '../../src/store/sql.js';
import { reconcileSettings } from '../contract/reconcileStores.js';
import { testContext } from '../helpers/context.js';
import { until } from '../ops/child.js';
import {
  detokenization,
  enqueueOperation,
  retire,
  sqliteDispatcher,
  tokenization,
  transfer,
} from '../outbox/fixtures.js';
import {
  amountsArb,
  type Command,
  commandArb,
  FAULTS,
  type Fault,
  inject,
  type Step,
  stepsOf,
} from './booksModel.js';

/**
 * Issue 29's property against the real simulator's books: the marketplace's operations queued
 * through vcu-sync's own validation, sent by the real dispatcher to the in-process simulator over
 * loopback (which books each approval: custody on a Tokenization, the units log on a Retire), the
 * decisions recorded as the inbox records them, the issuances, the units log and custody synced
 * back by the real mirror, then one full pass. Consistent operations raise no finding; each fault
 * (a double tokenization, a retirement the simulator loses, custody the simulator drops, a
 * retirement beyond what was tokenized) raises exactly the finding that names it.
 */

const DAY_MS = 86_400_000;
type Context = ReturnType<typeof testContext>;

const BUILDERS = {
  Tokenization: tokenization,
  Transfer: transfer,
  Retire: retire,
  Detokenization: detokenization,
};

/** Model ids (I0, U0, IX...) as the simulator's: issuances no base log entry names, and units. */
function simIds(sim: Simulator, modelIds: readonly { id: string; unit: string }[]): Map<string, string> {
  const units = sim.registry.snapshot('units');
  const named = new Set([...units.values()].map((u) => String(u.unitsIssuanceID)));
  const issuances = [...sim.registry.snapshot('issuances').keys()].filter((id) => !named.has(id));
  const unitIds = [...units.keys()];
  const ids = new Map<string, string>();
  modelIds.forEach((b, i) => {
    ids.set(b.id, issuances[i] as string);
    ids.set(b.unit, unitIds[i] as string);
  });
  return ids;
}

/** Queues `steps` through vcu-sync's validation, sends them, and records each decision the simulator made. */
async function sendAndDecide(ctx: Context, sim: Simulator, steps: readonly Step[], ids: Map<string, string>) {
  const store = new SqliteOperationsStore(ctx.database.sqlite);
  const rows: Array<{ id: number; ref: string }> = [];
  for (const s of steps) {
    const body = BUILDERS[s.type](s.ref, {
      issuanceId: Number(ids.get(s.issuance.id)),
      unitId: Number(ids.get(s.issuance.unit)),
      transactionAmount: s.amount,
      transactionUnit: s.unit,
    });
    const queued = enqueueOperation(ctx, body);
    if (queued.status !== 201 || !('row' in queued))
      throw new Error(`${s.ref} refused: ${JSON.stringify(queued)}`);
    rows.push({ id: queued.row.id, ref: s.ref });
  }
  const state = (ref: string) =>
    (
      ctx.database.sqlite
        .prepare('SELECT state FROM outbox WHERE marketplaceTransactionRef = ?')
        .get(ref) as {
        state: string;
      }
    ).state;
  const dispatcher = createDispatcherComponent(ctx, sqliteDispatcher(ctx));
  await dispatcher.start();
  try {
    await until('every operation answered', () =>
      rows.every((r) => state(r.ref) !== 'queued' && state(r.ref) !== 'sending'),
    );
  } finally {
    await dispatcher.stop();
  }
  for (const r of rows) {
    expect(state(r.ref), r.ref).toBe('accepted');
    const decision = sim.webhooks.decide(r.ref) === 'approve' ? 'approved' : 'rejected';
    // In outbox order: a tie in time is ordered by outbox id, as the rules order approvals.
    const now = isoAt(Date.now());
    expect(await store.recordDecision({ ...r, decision, reason: null, now })).toBe(true);
  }
}

async function sync(ctx: Context, target: 'issuances' | 'units' | 'custody'): Promise<void> {
  const outcome = await runSync(ctx, target, { backend: sqliteBackend(ctx.database.sqlite) });
  expect(outcome.status, outcome.error ?? undefined).toBe('succeeded');
}

/** The open findings after playing `commands` through the simulator, and those the fault must raise. */
async function play(
  amountsT: readonly number[],
  commands: readonly Command[],
  fault: { kind: Fault; at: number } | null,
) {
  const { books: model, steps, pending } = stepsOf(amountsT, commands, { wholeDetokenizations: true });
  const injection = fault ? inject(fault.kind, model, fault.at, steps.length) : null;
  const sim = await startSimulator({
    projects: 2,
    issuances: 12,
    units: 4,
    custody: { projects: [], issuances: [], units: [] },
  });
  const ctx = testContext({
    overrides: {
      'operator.url': sim.url,
      'operator.api_key': 'sim-api-key',
      'operator.rate_per_second': 100_000,
      'outbox.poll_ms': 10,
    },
  });
  try {
    const ids = simIds(sim, model);
    for (const b of model)
      sim.registry.change('issuances', ids.get(b.id) as string, { issuanceAmount: b.amountKg / 1000 });
    const faulty = injection?.steps ?? [];
    // A lost retirement is the last step: the simulator is told to lose it just before it is sent.
    const lost = fault?.kind === 'lost-retirement' ? faulty.slice(-1) : [];
    await sendAndDecide(ctx, sim, [...steps, ...faulty.slice(0, faulty.length - lost.length)], ids);
    if (lost.length > 0) {
      sim.books.loseRetirements(1);
      await sendAndDecide(ctx, sim, lost, ids);
    }
    if (injection?.dropped) sim.books.dropCustody({ issuances: [ids.get(injection.dropped.id) as string] });
    for (const s of pending) await sendQueuedOnly(ctx, s, ids);
    for (const target of ['issuances', 'units', 'custody'] as const) await sync(ctx, target);
    const store = commitQueueFor(ctx.database.sqlite);
    await runPass({ store, settings: reconcileSettings(), now: () => Date.now() + 8 * DAY_MS }, null);
    const open = await store.read<{ kind: string; subject: string; subject_id: string }>(
      sql`SELECT kind, subject, subject_id FROM reconciliation_findings WHERE resolved_at IS NULL`,
    );
    const named = (id: string) => ids.get(id) ?? id;
    return {
      open: open.map((r) => `${r.kind} ${r.subject} ${r.subject_id}`).sort(),
      expected: (injection?.expected ?? []).map((e) => e.replace(/\S+$/, named)).sort(),
    };
  } finally {
    ctx.operator().close();
    ctx.dispose();
    await sim.close();
  }
}

/** Reported and never sent (the dispatcher is stopped): awaiting, counted nowhere. */
async function sendQueuedOnly(ctx: Context, s: Step, ids: Map<string, string>) {
  const body = BUILDERS[s.type](s.ref, {
    issuanceId: Number(ids.get(s.issuance.id)),
    unitId: Number(ids.get(s.issuance.unit)),
    transactionAmount: s.amount,
    transactionUnit: s.unit,
  });
  expect(enqueueOperation(ctx, body).status).toBe(201);
}

const commands = fc.array(commandArb, { minLength: 1, maxLength: 10 });

describe("reconciliation against the simulator's books", () => {
  it('random operations and decisions the simulator books: no finding', async () => {
    await fc.assert(
      fc.asyncProperty(amountsArb, commands, async (amounts, cmds) => {
        expect((await play(amounts, cmds, null)).open).toEqual([]);
      }),
      { numRuns: 12 },
    );
  });

  it('each fault in the books: exactly the finding that names it', async () => {
    await fc.assert(
      fc.asyncProperty(amountsArb, commands, fc.nat(), async (amounts, cmds, at) => {
        for (const kind of FAULTS) {
          const { open, expected } = await play(amounts, cmds, { kind, at });
          expect(open, kind).toEqual(expected);
        }
      }),
      { numRuns: 4 },
    );
  });
});
