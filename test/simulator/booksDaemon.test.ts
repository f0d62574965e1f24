/**
 * The simulator's books as the daemon meets them: what the real dispatcher sends is booked, and the
 * real mirror syncs the books back (the raw material reconciliation compares). Over loopback, with
 * the daemon's own wire spellings and fields, on a real SQLite file.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { runSync } from '../../src/mirror/syncRun.js';
import { createDispatcherComponent } from '../../src/outbox/dispatcher.js';
import { type Simulator, startSimulator } from '../../src/simulator/index.js';
import { sqliteBackend } from '../../src/sqlite/mirror.js';
import { testContext } from '../helpers/context.js';
import { until } from '../ops/child.js';
import { enqueueOperation, retire, sqliteDispatcher, tokenization } from '../outbox/fixtures.js';

/** Outside the simulator's default custody set. */
const FREE_ISSUANCE = 100_200;
const FREE_UNIT = 1_000_000_040;

let sim: Simulator | undefined;
let ctx: ReturnType<typeof testContext> | undefined;
afterEach(async () => {
  ctx?.operator().close();
  ctx?.dispose();
  await sim?.close();
  sim = undefined;
  ctx = undefined;
});

async function setup() {
  // No webhook receiver: the books change when the simulator decides, not when the daemon hears of it.
  sim = await startSimulator({ projects: 5, issuances: 60, units: 40 });
  ctx = testContext({
    overrides: {
      'operator.url': sim.url,
      'operator.api_key': 'sim-api-key',
      'operator.rate_per_second': 100_000,
      'outbox.poll_ms': 10,
      'sync.page_size': 25,
      'custody.issuances': sim.registry.custodyIds('issuances').map(String),
    },
  });
  return { sim, ctx };
}

/** Sends every queued operation through the real dispatcher, until the operator has accepted each. */
async function dispatchAll(c: NonNullable<typeof ctx>, refs: readonly string[]): Promise<void> {
  const state = (ref: string) =>
    (
      c.database.sqlite.prepare('SELECT state FROM outbox WHERE marketplaceTransactionRef = ?').get(ref) as
        | { state: string }
        | undefined
    )?.state;
  const dispatcher = createDispatcherComponent(c, sqliteDispatcher(c));
  await dispatcher.start();
  try {
    await until(`${refs.join(', ')} accepted`, () => refs.every((r) => state(r) === 'accepted'));
  } finally {
    await dispatcher.stop();
  }
}

async function sync(c: NonNullable<typeof ctx>, target: 'units' | 'custody'): Promise<void> {
  const outcome = await runSync(c, target, { backend: sqliteBackend(c.database.sqlite) });
  expect(outcome.status, outcome.error ?? undefined).toBe('succeeded');
}

describe("the daemon's reports, booked by the simulator and mirrored back", () => {
  it('a retirement in kgCO2e reaches the mirrored units log in tCO2e; a lost one does not', async () => {
    const { sim, ctx } = await setup();
    await sync(ctx, 'units');
    sim.books.loseRetirements(1);
    expect(
      enqueueOperation(
        ctx,
        retire('lost-1', { issuanceId: 100_008, transactionAmount: 2000, transactionUnit: 'kgCO2e' }),
      ).status,
    ).toBe(201);
    await dispatchAll(ctx, ['lost-1']);
    expect(
      enqueueOperation(
        ctx,
        retire('kept-1', { issuanceId: 100_004, transactionAmount: 1500, transactionUnit: 'kgCO2e' }),
      ).status,
    ).toBe(201);
    await dispatchAll(ctx, ['kept-1']);
    await sync(ctx, 'units');

    const retired = ctx.database.sqlite
      .prepare(
        'SELECT unitsIssuanceID, unitsQuantity, unitsRetirementNotes FROM unit_operations WHERE unitsOperationID = ?',
      )
      .all(sim.books.view().appended[0]);
    expect(retired).toEqual([
      { unitsIssuanceID: '100004', unitsQuantity: 1.5, unitsRetirementNotes: 'offsetting 2025' },
    ]);
    expect(ctx.database.sqlite.prepare('SELECT count(*) AS n FROM unit_operations').get()).toEqual({ n: 41 });
    expect(sim.books.view().lost).toEqual(['lost-1']);
  });

  it('a tokenized issuance is in custody when the daemon reads it; dropped, its custody ends', async () => {
    const { sim, ctx } = await setup();
    expect(
      enqueueOperation(ctx, tokenization('tok-1', { issuanceId: FREE_ISSUANCE, unitId: FREE_UNIT })).status,
    ).toBe(201);
    await dispatchAll(ctx, ['tok-1']);
    await sync(ctx, 'custody');
    const custody = () =>
      ctx.database.sqlite
        .prepare('SELECT _custody_ended_at AS ended FROM custody_issuances WHERE issuanceId = ?')
        .get(String(FREE_ISSUANCE)) as { ended: string | null } | undefined;
    expect(custody()).toEqual({ ended: null });
    expect(
      ctx.database.sqlite
        .prepare(
          'SELECT count(*) AS n FROM custody_units WHERE unitsOperationID = ? AND _custody_ended_at IS NULL',
        )
        .get(String(FREE_UNIT)),
    ).toEqual({ n: 1 });

    sim.books.dropCustody({ issuances: [FREE_ISSUANCE] });
    await sync(ctx, 'custody');
    expect(custody()?.ended).toEqual(expect.any(String));
  });
});
