import { expect } from 'vitest';
import type { SqliteContext } from '../../src/app/sqliteStores.js';
import { ManualClock } from '../../src/common/clock.js';
import type { OperationRow as OutboxRow } from '../../src/operations/rows.js';
import { createDispatcherComponent, type Dispatcher } from '../../src/outbox/dispatcher.js';
import type { DispatcherOptions } from '../../src/outbox/dispatcherOptions.js';
import type { Simulator } from '../../src/simulator/index.js';
import { testContext } from '../helpers/context.js';
import type { capturingLogger } from './fixtures.js';
import { sqliteDispatcher } from './fixtures.js';

/** A context on a fresh database, pointed at the simulator, driven by a ManualClock. */
export function dispatchContext(
  sim: Simulator,
  log: ReturnType<typeof capturingLogger>['log'],
  overrides: Record<string, unknown> = {},
  options: Partial<DispatcherOptions> = {},
) {
  const clock = new ManualClock(Date.parse('2026-03-01T00:00:00.000Z'));
  const ctx = testContext({
    clock,
    overrides: {
      'operator.url': sim.url,
      'operator.api_key': 'sim-api-key',
      'operator.rate_per_second': 100_000,
      'operator.timeout_ms': 2_000,
      'outbox.poll_ms': 5,
      'outbox.concurrency': 4,
      ...overrides,
    },
  });
  ctx.log = log;
  const component = createDispatcherComponent(ctx, { ...sqliteDispatcher(ctx), ...options });
  return { ctx, clock, component, dispatcher: component.dispatcher as Dispatcher };
}

/**
 * Asserts that the operator received every queued operation (in queue order, each with its unit)
 * and, per unit, first in queue order: a retried operation may arrive again before the next of its
 * unit, never after it.
 */
export function expectUnitOrder(
  notifications: ReadonlyArray<{ ref?: string | undefined; seq: number }>,
  queued: ReadonlyArray<{ ref: string; unit: number }>,
): void {
  const byRef = new Map(queued.map((q, index) => [q.ref, { ...q, index }]));
  const received = notifications.filter((n) => n.ref !== undefined && byRef.has(n.ref));
  expect([...new Set(received.map((n) => n.ref))].sort()).toEqual([...byRef.keys()].sort());
  for (const unit of new Set(queued.map((q) => q.unit))) {
    const arrivals = received
      .filter((n) => byRef.get(n.ref as string)?.unit === unit)
      .sort((x, y) => x.seq - y.seq)
      .map((n) => byRef.get(n.ref as string)?.index)
      .filter((index, i, all) => i === 0 || all[i - 1] !== index);
    expect(arrivals).toEqual([...byRef.values()].filter((q) => q.unit === unit).map((q) => q.index));
  }
}

export function rows(ctx: SqliteContext): OutboxRow[] {
  return ctx.database.sqlite.prepare('SELECT * FROM outbox ORDER BY id').all() as OutboxRow[];
}

export function row(ctx: SqliteContext, ref: string): OutboxRow {
  return ctx.database.sqlite
    .prepare('SELECT * FROM outbox WHERE marketplaceTransactionRef = ?')
    .get(ref) as OutboxRow;
}

/**
 * Polls until `check` holds, moving the manual clock `stepMs` forward each round so backoffs run
 * out without anyone waiting for them. Bounded by real time only as a safety net.
 */
export async function driveUntil(
  what: string,
  clock: ManualClock,
  dispatcher: Dispatcher,
  check: () => boolean,
  stepMs = 1_000,
  timeoutMs = 40_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    clock.advance(stepMs);
    dispatcher.wake();
    await new Promise((r) => setTimeout(r, 5));
  }
}
