import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import type { ClaimParams } from '../../src/operations/storeSeam.js';
import { createDispatcherComponent } from '../../src/outbox/dispatcher.js';
import { type Simulator, startSimulator } from '../../src/simulator/index.js';
import { SqliteOperationsStore } from '../../src/sqlite/operationsStore.js';
import {
  assertNoPersonalData,
  capturingLogger,
  enqueueOperation,
  PERSONAL,
  readPause,
  retire,
  tokenization,
  transfer,
} from './fixtures.js';
import { dispatchContext, driveUntil, row, rows } from './harness.js';

let sim: Simulator;
const captured = capturingLogger();
const cleanups: (() => Promise<void>)[] = [];

beforeAll(async () => {
  sim = await startSimulator({ webhook: { policy: 'none' } });
});
afterEach(async () => {
  for (const c of cleanups.splice(0)) await c();
  sim.faults.clear();
});
afterAll(async () => {
  await sim.close();
  // Every log line of this file's runs, through the real logger: no personal value in any.
  expect(captured.lines.length).toBeGreaterThan(0);
  assertNoPersonalData(captured.lines);
});

function setup(overrides: Record<string, unknown> = {}) {
  const h = dispatchContext(sim, captured.log, overrides);
  cleanups.push(async () => {
    await h.component.stop();
    h.ctx.dispose();
  });
  return h;
}

function enqueue(h: ReturnType<typeof setup>, input: Record<string, unknown>) {
  const r = enqueueOperation(h.ctx, input);
  if (r.status !== 201) throw new Error(`enqueue answered ${r.status}`);
  return r.row;
}

const received = (ref: string) => sim.notifications.filter((n) => n.ref === ref);

describe('dispatcher delivery', () => {
  it('delivers through 500, 502, 503, 429, resets and timeouts; every row ends accepted', async () => {
    // The clock moves 1 s per 5 ms of real time: a lease of a few minutes would run out (and the row
    // be claimed again) while the 1 s timeout is still pending in real time. The timeout is a real
    // second, not less: on a loaded machine the simulator's 503 once took over 300 ms and counted
    // as a timeout.
    const h = setup({ 'operator.timeout_ms': 1_000, 'outbox.lease_seconds': 86_400 });
    const path = { pathPrefix: '/integration/v1/notify' };
    sim.faults.next(1, '500', path);
    sim.faults.next(1, '502', path);
    sim.faults.next(1, '503', path);
    sim.faults.next(1, '429', { ...path, retryAfterSec: 1 });
    sim.faults.next(1, 'reset', path);
    sim.faults.next(1, 'latency', { ...path, latencyMs: 3_000 });
    const refs = Array.from({ length: 8 }, (_, i) => `fault-${i}`);
    for (const ref of refs) enqueue(h, transfer(ref, { unitId: 1000 + refs.indexOf(ref) }));
    await h.component.start();
    await driveUntil('all accepted', h.clock, h.dispatcher, () =>
      rows(h.ctx).every((r) => r.state === 'accepted'),
    );
    expect(sim.faults.pending()).toEqual([]);
    const attempts = h.ctx.database.sqlite
      .prepare('SELECT status_code, error FROM outbox_attempts')
      .all() as {
      status_code: number | null;
      error: string | null;
    }[];
    const codes = attempts.map((a) => a.status_code);
    expect(codes).toEqual(expect.arrayContaining([500, 502, 503, 429, 202]));
    expect(attempts.filter((a) => a.status_code === null).length).toBeGreaterThanOrEqual(2); // reset + timeout
    for (const ref of refs) {
      expect(received(ref).length).toBeGreaterThanOrEqual(1);
      // The same body on every attempt.
      expect(new Set(received(ref).map((n) => JSON.stringify(n.body))).size).toBe(1);
    }
    // The operator echoes the body; the stored answer must not keep the personal fields.
    for (const r of rows(h.ctx)) expect(r.response).not.toContain(PERSONAL.originUserEmail);
  });

  it('honours Retry-After exactly and retries with the same ref', async () => {
    const h = setup({ 'outbox.backoff_base_ms': 10 });
    sim.faults.next(1, '429', { pathPrefix: '/integration/v1/notify', retryAfterSec: 30 });
    enqueue(h, tokenization('ra-1'));
    const t0 = h.clock.now();
    await h.component.start();
    await driveUntil(
      'first attempt settled',
      h.clock,
      h.dispatcher,
      () => row(h.ctx, 'ra-1').last_status === 429,
      0,
    );
    const waiting = row(h.ctx, 'ra-1');
    expect(waiting.state).toBe('queued');
    expect(Date.parse(waiting.next_attempt_at) - t0).toBeGreaterThanOrEqual(30_000);
    await driveUntil('accepted', h.clock, h.dispatcher, () => row(h.ctx, 'ra-1').state === 'accepted', 5_000);
    expect(received('ra-1').map((n) => n.status)).toEqual([429, 202]);
  });

  it('a 422 from the operator fails the row at once with its message', async () => {
    // A wire spelling the operator does not know makes it refuse the body.
    const h = setup({ 'outbox.wire_spelling': { retire: 'Retirement' } });
    enqueue(h, retire('perm-1'));
    await h.component.start();
    await driveUntil('failed', h.clock, h.dispatcher, () => row(h.ctx, 'perm-1').state === 'failed');
    const r = row(h.ctx, 'perm-1');
    expect(r.last_status).toBe(422);
    expect(r.last_error).toMatch(/operator answered 422: notification is invalid.*operationType/);
    expect(r.attempts).toBe(1);
    expect(r.finished_at).not.toBeNull();
  });

  it('gives up after max_attempts', async () => {
    const h = setup({ 'outbox.max_attempts': 3, 'outbox.backoff_base_ms': 10 });
    sim.faults.next(10, '503', { pathPrefix: '/integration/v1/notify' });
    enqueue(h, tokenization('max-1'));
    await h.component.start();
    await driveUntil('failed', h.clock, h.dispatcher, () => row(h.ctx, 'max-1').state === 'failed');
    expect(row(h.ctx, 'max-1').last_error).toMatch(/gave up after 3 attempts; last: operator answered 503/);
    expect(received('max-1').length).toBe(3);
  });

  it('401 pauses all sending (shared in daemon_state), burns no attempt, and resumes after a probe succeeds', async () => {
    const h = setup({ 'outbox.backoff_base_ms': 1_000 });
    sim.faults.next(4, '401', { pathPrefix: '/integration/v1/notify' });
    for (let i = 0; i < 3; i++) enqueue(h, tokenization(`auth-${i}`, { unitId: 500 + i }));
    await h.component.start();
    await driveUntil('paused', h.clock, h.dispatcher, () => readPause(h.ctx.database.sqlite) !== null, 0);
    const pause = readPause(h.ctx.database.sqlite)!;
    expect(pause.status).toBe(401);
    expect(pause.reason).toMatch(/401/);
    await driveUntil(
      'every row accepted',
      h.clock,
      h.dispatcher,
      () => rows(h.ctx).every((r) => r.state === 'accepted'),
      2_000,
    );
    expect(readPause(h.ctx.database.sqlite)).toBeNull();
    expect(h.dispatcher.paused).toBeNull();
    // 401s were given back: each row used exactly its one successful attempt.
    expect(rows(h.ctx).map((r) => r.attempts)).toEqual([1, 1, 1]);
    const statuses = sim.notifications.filter((n) => n.ref?.startsWith('auth-')).map((n) => n.status);
    expect(statuses.filter((s) => s === 401).length).toBe(4);
    expect(captured.lines.some((l) => l.includes('"event":"outbox.paused"'))).toBe(true);
    expect(captured.lines.some((l) => l.includes('"event":"outbox.resumed"'))).toBe(true);
  });

  it('sends operations on the same unit in queue order, different units in parallel', async () => {
    await deliversInUnitOrder(5, 10, 'interleaved');
  });

  it('keeps unit order on a few units behind a queue longer than the claim walks', async () => {
    // 3 units x 120 = 360 queued, each unit's in one run: while the first unit's row is out, the
    // first WALK_ROWS queued rows all wait behind it, and the claim finds the others' next rows by
    // asking each unit (operations/claim.ts), through failures and their backoffs.
    await deliversInUnitOrder(3, 120, 'grouped');
  });
});

/**
 * `perUnit` operations on each of `units` units, queued one unit after another or interleaved,
 * delivered through a quarter of failed attempts: every one accepted, and per unit every attempt of
 * an older operation arrives before any attempt of a newer one.
 */
async function deliversInUnitOrder(
  units: number,
  perUnit: number,
  layout: 'interleaved' | 'grouped',
): Promise<void> {
  const h = setup({ 'outbox.concurrency': 8, 'outbox.backoff_base_ms': 10 });
  sim.faults.setRates({ error: 0.25 });
  const queued: { ref: string; unit: number; index: number }[] = [];
  for (let i = 0; i < units * perUnit; i++) {
    const unit = layout === 'interleaved' ? i % units : Math.floor(i / perUnit);
    const ref = `ord-${units}-${i}`;
    enqueue(h, tokenization(ref, { unitId: 9000 + unit }));
    queued.push({ ref, unit, index: i });
  }
  await h.component.start();
  await driveUntil(
    'all accepted',
    h.clock,
    h.dispatcher,
    () => rows(h.ctx).every((r) => r.state === 'accepted'),
    100,
  );
  sim.faults.clear();
  const byRef = new Map(queued.map((q) => [q.ref, q]));
  for (let unit = 0; unit < units; unit++) {
    const arrivals = sim.notifications
      .filter((n) => n.ref && byRef.get(n.ref)?.unit === unit)
      .map((n) => byRef.get(n.ref!)!.index);
    // Every attempt (failed ones too) of an older operation arrives before any of a newer one.
    expect(arrivals).toEqual([...arrivals].sort((a, b) => a - b));
    expect(new Set(arrivals).size).toBe(perUnit);
  }
}

/** The SQLite store, counting the dispatcher's claims. */
class CountingStore extends SqliteOperationsStore {
  claims = 0;
  override claim(given: ClaimParams | (() => ClaimParams)) {
    this.claims++;
    return super.claim(given);
  }
}

describe('dispatcher idling', () => {
  it('sleeps, instead of claiming again and again, while every due row waits behind its unit’s row in flight', async () => {
    // A long poll: the loop must be woken by each send's end, not by its timer.
    const h = setup({ 'outbox.concurrency': 8, 'outbox.poll_ms': 60_000 });
    const refs = Array.from({ length: 5 }, (_, i) => `idle-${i}`);
    for (const ref of refs) enqueue(h, transfer(ref, { unitId: 9100 }));
    const store = new CountingStore(h.ctx.database.sqlite);
    const component = createDispatcherComponent(h.ctx, { store, hooks: null });
    // Stopped before setup's cleanup closes the database under it.
    cleanups.unshift(() => component.stop());
    // A slow operator: the unit's next row waits behind each send for its whole answer.
    sim.faults.setRates({ latencyMs: 300 });
    await component.start();
    await vi.waitFor(() => expect(rows(h.ctx).map((r) => r.state)).toEqual(refs.map(() => 'accepted')), {
      timeout: 60_000,
      interval: 20,
    });
    expect(received(refs[4]!)).toHaveLength(1);
    // Per row: its claim, and at most two that find it still in flight (spinning made hundreds).
    expect(store.claims).toBeLessThanOrEqual(3 * refs.length);
  });
});

describe('decisions that arrive early', () => {
  it('a pending decision is applied in the same transaction that marks the row accepted', async () => {
    const h = setup();
    enqueue(h, tokenization('early-1'));
    h.ctx.database.sqlite
      .prepare(
        `INSERT INTO webhook_events (webhook_id, received_at, event_type, marketplaceTransactionRef, decision, body, outcome)
         VALUES ('msg-early-1', '2026-03-01T00:00:00.000Z', 'transaction.approved', 'early-1', 'approved', '{}', 'pending')`,
      )
      .run();
    await h.component.start();
    await driveUntil('approved', h.clock, h.dispatcher, () => row(h.ctx, 'early-1').state === 'approved', 0);
    expect(row(h.ctx, 'early-1').accepted_at).not.toBeNull();
    const event = h.ctx.database.sqlite
      .prepare("SELECT outcome FROM webhook_events WHERE webhook_id = 'msg-early-1'")
      .get();
    expect(event).toEqual({ outcome: 'applied' });
  });
});

describe('personal data', () => {
  it('is scrubbed from stored rows scrub_after_days after the final state; a repeat still answers 200', async () => {
    const h = setup({ 'outbox.scrub_after_days': 30 });
    const input = transfer('scrub-1');
    const queued = enqueue(h, input);
    enqueue(h, transfer('scrub-2'));
    const old = new Date(h.clock.now() - 31 * 86_400_000).toISOString();
    const recent = new Date(h.clock.now() - 29 * 86_400_000).toISOString();
    const finish = h.ctx.database.sqlite.prepare(
      "UPDATE outbox SET state = 'approved', finished_at = ? WHERE marketplaceTransactionRef = ?",
    );
    finish.run(old, 'scrub-1');
    finish.run(recent, 'scrub-2');
    await h.component.start();
    await driveUntil('scrubbed', h.clock, h.dispatcher, () => row(h.ctx, 'scrub-1').scrubbed_at !== null, 0);
    const scrubbed = row(h.ctx, 'scrub-1');
    assertNoPersonalData([scrubbed.body]);
    expect(JSON.parse(scrubbed.body)).toMatchObject({
      originUserEmail: '[scrubbed]',
      originWallet: '0xorigin',
    });
    expect(scrubbed.body_hash).toBe(queued.body_hash);
    expect(row(h.ctx, 'scrub-2').scrubbed_at).toBeNull();
    expect(enqueueOperation(h.ctx, input).status).toBe(200);
  });
});

describe('settles owed while the store failed', () => {
  it('try again as soon as the store is back (retryOwedNow), not at their backoff', async () => {
    // A poll of a minute: the owed settle's first backoff is 30-60 s away, so only the call
    // forward can record it within the wait below.
    const h = setup({ 'outbox.poll_ms': 60_000, 'outbox.lease_seconds': 3_600 });
    enqueue(h, transfer('owed-1', { unitId: 9200 }));
    let away = true;
    let tries = 0;
    class AwayStore extends SqliteOperationsStore {
      override async settle(...args: Parameters<SqliteOperationsStore['settle']>) {
        tries++;
        if (away) throw new Error('the database is away');
        return super.settle(...args);
      }
    }
    const component = createDispatcherComponent(h.ctx, {
      store: new AwayStore(h.ctx.database.sqlite),
      hooks: null,
    });
    cleanups.unshift(() => component.stop());
    await component.start();
    await vi.waitFor(() => expect(component.dispatcher.owedSettles).toBe(1), {
      timeout: 20_000,
      interval: 20,
    });
    // Sent and answered; its row still `sending`, holding the unit's next operation back.
    expect(received('owed-1')).toHaveLength(1);
    expect(row(h.ctx, 'owed-1').state).toBe('sending');
    away = false;
    component.dispatcher.retryOwedNow();
    await vi.waitFor(() => expect(row(h.ctx, 'owed-1').state).toBe('accepted'), {
      timeout: 20_000,
      interval: 20,
    });
    expect(tries).toBe(2);
    expect(component.dispatcher.owedSettles).toBe(0);
    expect(received('owed-1')).toHaveLength(1);
  });
});
