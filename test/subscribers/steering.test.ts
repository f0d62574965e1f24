import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { Webhook } from 'standardwebhooks';
import { afterEach, describe, expect, it } from 'vitest';
import { isoAt, ManualClock } from '../../src/common/clock.js';
import { ConfigError } from '../../src/common/errors.js';
import { loadConfig, maskedConfig } from '../../src/config/config.js';
import { decide } from '../../src/operations/transitions.js';
import { stateChangeSinkOf } from '../../src/sqlite/changes.js';
import { commitQueueFor, driveSqlite } from '../../src/sqlite/commitQueue.js';
import { DeliveriesStore } from '../../src/subscribers/deliveriesStore.js';
import { createSubscriberComponent } from '../../src/subscribers/dispatcher.js';
import { decideDelivery } from '../../src/subscribers/nextStep.js';
import { SubscriberSender } from '../../src/subscribers/send.js';
import { responseSchema, schemaProblems } from '../api/schemaCheck.js';
import { tempDir } from '../helpers/context.js';
import { getHealth } from '../helpers/health.js';
import { apiCaller } from '../helpers/http.js';
import { sqliteApiComponent } from '../helpers/sqliteApi.js';
import { cancelQueued, capturingLogger, enqueueOperation, PERSONAL, transfer } from '../outbox/fixtures.js';
import { deliveryRows, SUB_SECRET, subscriberContext, TestSubscriber, until } from './harness.js';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

function context(
  subs: Parameters<typeof subscriberContext>[0],
  options: Parameters<typeof subscriberContext>[1] = {},
) {
  const ctx = subscriberContext(subs, options);
  cleanups.push(() => ctx.dispose());
  return ctx;
}

/** Queues a Transfer (with every personal field) and moves it to accepted, as the operator's 2xx would. */
function acceptedOperation(ctx: ReturnType<typeof context>, ref: string): number {
  const result = enqueueOperation(ctx, transfer(ref));
  if (result.status !== 201) throw new Error('not queued');
  ctx.database.sqlite
    .prepare(`UPDATE outbox SET state = 'accepted', accepted_at = updated_at WHERE id = ?`)
    .run(result.row.id);
  return result.row.id;
}

describe('deliveries are written with the state change', () => {
  it('one per subscriber whose events match; a reason that names the user is masked; nothing for queued/sending', () => {
    const ctx = context([
      { name: 'all', url: 'http://127.0.0.1:9/a', secret: SUB_SECRET },
      { name: 'approvals', url: 'http://127.0.0.1:9/b', secret: SUB_SECRET, events: ['operation.approved'] },
    ]);
    const id = acceptedOperation(ctx, 'mask-1');
    expect(deliveryRows(ctx)).toEqual([]);
    const reason = `refused: ${PERSONAL.originUserName} <${PERSONAL.originUserEmail}> doc ${PERSONAL.originUserDocId}`;
    const now = isoAt(Date.now());
    const { sqlite } = ctx.database;
    const decision = { id, ref: 'mask-1', decision: 'rejected', reason, now } as const;
    sqlite.transaction(() => driveSqlite(sqlite, decide(decision, stateChangeSinkOf(sqlite))))();
    const rows = deliveryRows(ctx);
    expect(rows.map((r) => [r.subscriber, r.event_type, r.state])).toEqual([
      ['all', 'operation.rejected', 'pending'],
    ]);
    const body = JSON.parse(String(rows[0]!.body));
    expect(body).toEqual({
      type: 'operation.rejected',
      timestamp: now,
      data: {
        marketplaceTransactionRef: 'mask-1',
        operationType: 'Transfer',
        state: 'rejected',
        reason: expect.stringContaining('refused'),
        at: now,
      },
    });
    for (const value of Object.values(PERSONAL)) expect(String(rows[0]!.body)).not.toContain(value);
    // A cancel from the CLI or API raises operation.cancelled for "all" only.
    expect(enqueueOperation(ctx, transfer('mask-2')).status).toBe(201);
    cancelQueued(ctx, 'mask-2');
    expect(deliveryRows(ctx).map((r) => [r.subscriber, r.event_type, r.ref])).toEqual([
      ['all', 'operation.rejected', 'mask-1'],
      ['all', 'operation.cancelled', 'mask-2'],
    ]);
    // Every delivery has its own stable webhook id.
    const ids = deliveryRows(ctx).map((r) => r.webhook_id);
    expect(new Set(ids).size).toBe(2);
  });

  it('a delivery older than max_age_hours goes to the dead letter at its next failure (clock injected, row backdated)', async () => {
    const sub = new TestSubscriber();
    sub.status = 503;
    await sub.up();
    cleanups.push(() => sub.down());
    const clock = new ManualClock(Date.now());
    const ctx = context([{ name: 'old', url: sub.url, secret: SUB_SECRET }], {
      overrides: { 'subscriber_delivery.poll_ms': 10, 'subscriber_delivery.max_age_hours': 72 },
      clock,
    });
    expect(enqueueOperation(ctx, transfer('age-1')).status).toBe(201);
    cancelQueued(ctx, 'age-1');
    ctx.database.sqlite
      .prepare('UPDATE deliveries SET created_at = ?')
      .run(isoAt(clock.now() - 73 * 3_600_000));
    const { log, lines } = capturingLogger();
    ctx.log = log;
    const component = createSubscriberComponent(ctx, {
      store: new DeliveriesStore(commitQueueFor(ctx.database.sqlite)),
    });
    await component.start();
    cleanups.push(() => component.stop());
    await until(() => deliveryRows(ctx)[0]?.state === 'dead', 'dead letter by age');
    await until(() => lines.some((l) => l.includes('"subscribers.dead"')), 'the dead letter logged');
    const logged = lines.join('\n');
    for (const secret of [SUB_SECRET, ...Object.values(PERSONAL)]) expect(logged).not.toContain(secret);
    expect(deliveryRows(ctx)[0]).toMatchObject({ attempts: 1, last_status: 503 });
    expect(String(deliveryRows(ctx)[0]!.last_error)).toContain('older than the maximum age');

    const health = getHealth(ctx.database.sqlite, ctx.config, clock.now());
    expect(health.problems.map((p) => p.code)).toContain('subscriber-dead-letter');
    expect(health.exitCode).toBeGreaterThanOrEqual(1);
  });
});

describe('status, API and config', () => {
  it('subscriber-failing once the oldest undelivered event is older than failing_warn_minutes; /v1/deliveries lists, retries and redrives', async () => {
    const token = 'subs-api-token-0123456789';
    const ctx = context([{ name: 'api', url: 'http://127.0.0.1:9/x', secret: SUB_SECRET }], {
      overrides: { 'api.listen': '127.0.0.1:0', 'api.token': token },
    });
    for (const ref of ['api-1', 'api-2', 'api-3']) {
      expect(enqueueOperation(ctx, transfer(ref)).status).toBe(201);
      cancelQueued(ctx, ref);
    }
    const now = Date.now();
    const health = getHealth(ctx.database.sqlite, ctx.config, now + 16 * 60_000);
    const failing = health.problems.find((p) => p.code === 'subscriber-failing');
    expect(failing?.message).toMatch(/subscriber api: 3 event\(s\) waiting, the oldest for 16m/);
    expect(getHealth(ctx.database.sqlite, ctx.config, now).problems.map((p) => p.code)).not.toContain(
      'subscriber-failing',
    );

    const [first, second, third] = deliveryRows(ctx).map((r) => Number(r.id));
    const sqlite = ctx.database.sqlite;
    sqlite
      .prepare(`UPDATE deliveries SET state = 'dead', dead_at = ? WHERE id IN (?, ?)`)
      .run(isoAt(now), first, second);
    sqlite
      .prepare(`UPDATE deliveries SET state = 'delivered', delivered_at = ? WHERE id = ?`)
      .run(isoAt(now), third);

    const api = sqliteApiComponent(ctx);
    await api.start();
    cleanups.push(() => api.stop());
    const call = apiCaller(`http://127.0.0.1:${api.address()!.port}`, token);

    const dead = await call('GET', '/v1/deliveries?state=dead');
    expect(dead.status).toBe(200);
    // Every answer is what /openapi.json says it is.
    const doc = (await call('GET', '/openapi.json')).json as Record<string, unknown>;
    const conforms = (json: unknown, method: string, docPath: string, status: number) =>
      expect(schemaProblems(json, responseSchema(doc, method, docPath, status), doc)).toEqual([]);
    conforms(dead.json, 'get', '/v1/deliveries', 200);
    expect((dead.json as { items: Array<{ id: number; type: string }> }).items.map((i) => i.id)).toEqual([
      first,
      second,
    ]);
    const metrics = await call('GET', '/metrics');
    expect(metrics.text).toMatch(/vcu_sync_subscriber_deliveries\{subscriber="api",state="dead"\} 2/);

    const retried = await call('POST', `/v1/deliveries/${first}/retry`);
    expect(retried.status).toBe(200);
    expect(retried.json).toMatchObject({ id: first, state: 'pending', attempts: 0 });
    conforms(retried.json, 'post', '/v1/deliveries/{id}/retry', 200);
    expect((await call('POST', `/v1/deliveries/${third}/retry`)).status).toBe(409);
    expect((await call('POST', '/v1/deliveries/99999/retry')).status).toBe(404);
    expect((await call('POST', '/v1/deliveries/redrive', { since: 'yesterday' })).status).toBe(400);
    const redriven = await call('POST', '/v1/deliveries/redrive', { since: '1h', subscriber: 'api' });
    expect(redriven.status).toBe(200);
    expect(redriven.json).toMatchObject({ redriven: 1, ids: [second] });
    conforms(redriven.json, 'post', '/v1/deliveries/redrive', 200);
    expect(deliveryRows(ctx).map((r) => r.state)).toEqual(['pending', 'pending', 'delivered']);
  });

  it('a bad subscriber secret is one line naming the key; secret_file is read; secrets are masked', () => {
    const { dir, cleanup } = tempDir();
    cleanups.push(cleanup);
    const file = path.join(dir, 'c.toml');
    writeFileSync(file, '[[subscribers]]\nurl = "http://127.0.0.1:9/x"\nsecret = "not-a-secret"\n');
    let error: unknown;
    try {
      loadConfig({ file, env: {} });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).problems).toEqual([
      'subscribers[0].secret: expected whsec_ followed by base64 of at least 16 bytes',
    ]);
    expect((error as ConfigError).message).not.toContain('not-a-secret');

    const secretFile = path.join(dir, 'secret');
    writeFileSync(secretFile, `${SUB_SECRET}\n`);
    writeFileSync(
      file,
      `[[subscribers]]\nurl = "http://127.0.0.1:9/x"\nsecret_file = "${secretFile}"\nevents = ["operation.failed"]\n`,
    );
    const config = loadConfig({ file, env: {} });
    expect(config.subscribers[0]).toMatchObject({ secret: SUB_SECRET, events: ['operation.failed'] });
    expect(JSON.stringify(maskedConfig(config))).not.toContain(SUB_SECRET);

    writeFileSync(file, '[[subscribers]]\nurl = "http://127.0.0.1:9/x"\n');
    expect(() => loadConfig({ file, env: {} })).toThrow(
      /subscribers\[0\]: set exactly one of secret and secret_file/,
    );
    writeFileSync(
      file,
      `[[subscribers]]\nurl = "http://127.0.0.1:9/x"\nsecret = "${SUB_SECRET}"\nevents = ["operation.queued"]\n`,
    );
    expect(() => loadConfig({ file, env: {} })).toThrow(/subscribers\[0\]\.events\[0\]/);
  });
});

describe('the dead-letter limits', () => {
  it('with the default settings, a subscriber down for an hour (shortest jitter every time) loses nothing; past max_attempts it is dead', () => {
    const c = loadConfig({ env: {} }).subscriber_delivery;
    const policy = {
      baseMs: c.backoff_base_ms,
      capMs: c.backoff_cap_ms,
      maxAttempts: c.max_attempts,
      maxAgeMs: c.max_age_hours * 3_600_000,
    };
    const start = Date.parse('2026-03-01T00:00:00Z');
    let now = start;
    let attempts = 0;
    const refused = { kind: 'error' as const, error: 'request ECONNREFUSED' };
    while (now - start < 3_600_000) {
      attempts += 1;
      const step = decideDelivery(refused, { attempts, ageFromMs: start }, policy, now, () => 0);
      expect(step.to, `attempt ${attempts} after ${(now - start) / 1000} s`).toBe('pending');
      if (step.to !== 'pending') return;
      now = Date.parse(step.nextAttemptAt);
    }
    const last = decideDelivery(refused, { attempts: c.max_attempts, ageFromMs: now }, policy, now, () => 0);
    expect(last).toMatchObject({
      to: 'dead',
      error: expect.stringContaining(`after ${c.max_attempts} attempts`),
    });
    const answered = decideDelivery(
      { kind: 'answered', status: 204, retryAfterMs: undefined },
      { attempts: c.max_attempts, ageFromMs: start },
      policy,
      start + 100 * 3_600_000,
      () => 0,
    );
    expect(answered).toEqual({ to: 'delivered', status: 204 });
  });
});

describe('the idle wait', () => {
  it('is the head row’s next attempt, not the due rows waiting behind it (no busy loop while a subscriber is down)', async () => {
    const ctx = context([{ name: 'wait', url: 'http://127.0.0.1:9/x', secret: SUB_SECRET }]);
    for (const ref of ['wait-1', 'wait-2']) {
      expect(enqueueOperation(ctx, transfer(ref)).status).toBe(201);
      cancelQueued(ctx, ref);
    }
    const later = isoAt(Date.now() + 60_000);
    const [head] = deliveryRows(ctx).map((r) => Number(r.id));
    ctx.database.sqlite.prepare('UPDATE deliveries SET next_attempt_at = ? WHERE id = ?').run(later, head);
    const store = new DeliveriesStore(commitQueueFor(ctx.database.sqlite));
    expect(await store.nextDue('wait')).toBe(later);
    expect(await store.nextDue('nobody')).toBeNull();
  });
});

describe('signatures', () => {
  it('are exactly what the standardwebhooks library signs, and it verifies them', () => {
    const sender = new SubscriberSender({ timeoutMs: 1_000, connectTimeoutMs: 1_000 });
    cleanups.push(() => sender.close());
    const sub = { key: 'sig', url: 'http://127.0.0.1:9/x', secret: SUB_SECRET, events: [] };
    const body = JSON.stringify({ type: 'operation.approved', data: { note: 'ünïcode ✓' } });
    const nowMs = Date.now();
    const headers = sender.headers(sub, 'msg_abc', body, nowMs);
    const library = new Webhook(SUB_SECRET);
    expect(headers['webhook-signature']).toBe(library.sign('msg_abc', new Date(nowMs), body));
    expect(library.verify(body, headers)).toEqual(JSON.parse(body));
    expect(() => library.verify(`${body} `, headers)).toThrow();
  });
});
