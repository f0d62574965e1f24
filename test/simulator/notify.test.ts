import { afterEach, describe, expect, it } from 'vitest';
import {
  DEFAULT_WEBHOOK_SECRET,
  REJECT_REASON,
  type Simulator,
  startSimulator,
} from '../../src/simulator/index.js';
import { KEY, post, type Receiver, startReceiver } from './helpers.js';

const valid = (ref: string, extra: Record<string, unknown> = {}) => ({
  marketplaceId: 'mkt-1',
  operationType: 'Transfer',
  unitId: 17,
  issuanceId: 100004,
  transactionAmount: 12.5,
  transactionUnit: 'tCO2e',
  originUserEmail: 'alice@example.test',
  marketplaceTransactionRef: ref,
  transactionReferenceId: `tx-${ref}`,
  transactionTimestamp: '2025-01-02T03:04:05.678Z',
  ...extra,
});

let sim: Simulator | undefined;
let receiver: Receiver | undefined;
afterEach(async () => {
  await sim?.close();
  await receiver?.close();
  sim = undefined;
  receiver = undefined;
});

describe('POST /notify validation', () => {
  it('answers 400 for a body that is not JSON or not an object', async () => {
    sim = await startSimulator();
    for (const body of ['{not json', '[1,2]', '"str"']) {
      const r = await post(sim, '/integration/v1/notify', body);
      expect(r.status, body).toBe(400);
      expect(r.body).toHaveProperty('message');
    }
  });

  it('answers 422 with a field list for invalid fields', async () => {
    sim = await startSimulator();
    const cases: [Record<string, unknown>, string][] = [
      [{ ...valid('a'), marketplaceTransactionRef: '' }, 'marketplaceTransactionRef'],
      [{ ...valid('a'), marketplaceTransactionRef: undefined }, 'marketplaceTransactionRef'],
      [{ ...valid('a'), operationType: 'Mint' }, 'operationType'],
      // The daemon's own input alias, not a spelling the operator documents.
      [{ ...valid('a'), operationType: 'Retirement' }, 'operationType'],
      [{ ...valid('a'), transactionAmount: 0 }, 'transactionAmount'],
      [{ ...valid('a'), transactionAmount: '5' }, 'transactionAmount'],
      [{ ...valid('a'), issuanceId: '100004' }, 'issuanceId'],
      [{ ...valid('a'), transactionUnit: 'kg' }, 'transactionUnit'],
      [{ ...valid('a'), operationType: 'Detokenization' }, 'unitsAccountDestinationID'],
      [{ ...valid('a'), operationType: 'detokenization', unitsAccountDestinationID: 9 }, 'transactionAmount'],
    ];
    for (const [body, field] of cases) {
      const r = await post(sim, '/integration/v1/notify', body);
      expect(r.status, field).toBe(422);
      const errors = (r.body as { errors: { field: string; message: string }[] }).errors;
      expect(
        errors.map((e) => e.field),
        JSON.stringify(body),
      ).toContain(field);
    }
    const missing = await post(sim, '/integration/v1/notify', {
      operationType: 'Retire',
      transactionAmount: 1,
    });
    expect((missing.body as { errors: { field: string; message: string }[] }).errors).toContainEqual({
      field: 'marketplaceTransactionRef',
      message: 'is required',
    });
  });

  it('accepts every operation spelling case-insensitively, answers 202 with the body echoed, records in order', async () => {
    sim = await startSimulator();
    const refs = ['r1', 'r2', 'r3', 'r4', 'r5'];
    const types = ['Tokenization', 'TRANSFER', 'retire', 'Retire', 'Detokenization'];
    for (const [i, ref] of refs.entries()) {
      const body = valid(ref, {
        operationType: types[i],
        transactionAmount: 3,
        unitsAccountDestinationID: 77,
      });
      const r = await post(sim, '/integration/v1/notify', body, { apikey: KEY });
      expect(r.status).toBe(202);
      expect(r.body).toEqual(body);
    }
    expect(sim.notifications.map((n) => n.ref)).toEqual(refs);
    expect(sim.notifications.every((n) => n.status === 202)).toBe(true);
    // Credentials are never recorded.
    expect(sim.notifications[0]?.headers).not.toHaveProperty('apikey');
    expect(sim.notifications[0]?.headers['content-type']).toBe('application/json');
  });

  it('answers 200 when configured for Part A, accepts no key, refuses a wrong key with 403', async () => {
    sim = await startSimulator({ notifyStatus: 200 });
    expect((await post(sim, '/integration/v1/notify', valid('a'))).status).toBe(200);
    expect(
      (await post(sim, '/integration/v1/notify', valid('b'), { authorization: 'Bearer bad' })).status,
    ).toBe(403);
  });

  it('records and accepts a duplicate marketplaceTransactionRef again (at-least-once delivery)', async () => {
    sim = await startSimulator();
    expect((await post(sim, '/integration/v1/notify', valid('dup'))).status).toBe(202);
    expect((await post(sim, '/integration/v1/notify', valid('dup'))).status).toBe(202);
    const res = await fetch(`${sim.url}/_sim/notifications?ref=dup`);
    expect(((await res.json()) as unknown[]).length).toBe(2);
  });
});

describe('decision webhooks', () => {
  it('sends a transaction.approved webhook that the standardwebhooks library verifies', async () => {
    receiver = await startReceiver(DEFAULT_WEBHOOK_SECRET);
    sim = await startSimulator({ webhook: { url: receiver.url, delayMs: 0 } });
    await post(sim, '/integration/v1/notify', valid('ok-1'));
    const [ev] = await receiver.waitFor(1);
    expect(ev?.verified).toBe(true);
    expect(ev?.payload).toMatchObject({
      type: 'transaction.approved',
      timestamp: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/),
      data: { marketplaceTransactionRef: 'ok-1', transactionReferenceId: 'tx-ok-1', status: 'approved' },
    });
    expect(ev?.payload.data).not.toHaveProperty('reason');
    await sim.webhooksIdle();
    expect(sim.webhooksSent[0]).toMatchObject({ delivered: true, attempts: 1, status: 204 });
  });

  it('a receiver with another secret rejects the signature (so the signature really is checked)', async () => {
    receiver = await startReceiver(
      `whsec_${Buffer.from('another-secret-of-32-bytes-long!').toString('base64')}`,
    );
    sim = await startSimulator({
      webhook: { url: receiver.url, delayMs: 0, maxAttempts: 2, retryBaseMs: 1 },
    });
    await post(sim, '/integration/v1/notify', valid('x'));
    await sim.webhooksIdle();
    expect(receiver.events).toHaveLength(0);
    expect(sim.webhooksSent[0]).toMatchObject({ delivered: false, status: 401, attempts: 2 });
  });

  it('policy alternate approves, rejects, approves; prefixes and per-ref decisions override; duplicates keep theirs', async () => {
    receiver = await startReceiver(DEFAULT_WEBHOOK_SECRET);
    sim = await startSimulator({ webhook: { url: receiver.url, delayMs: 0, policy: 'alternate' } });
    sim.webhooks.setDecision('forced', 'reject', 'fraud check');
    for (const ref of ['a1', 'a2', 'a3', 'reject-1', 'approve-1', 'silent-1', 'forced', 'a1']) {
      await post(sim, '/integration/v1/notify', valid(ref));
    }
    await sim.webhooksIdle();
    const byRef = receiver.events.map((e) => {
      const d = e.payload.data as Record<string, unknown>;
      return [d.marketplaceTransactionRef, d.status, d.reason ?? null];
    });
    expect(byRef).toHaveLength(7); // silent-1 gets none
    expect(byRef).toEqual(
      expect.arrayContaining([
        ['a1', 'approved', null],
        ['a2', 'rejected', REJECT_REASON],
        ['a3', 'approved', null],
        ['reject-1', 'rejected', REJECT_REASON],
        ['approve-1', 'approved', null],
        ['forced', 'rejected', 'fraud check'],
      ]),
    );
    expect(byRef.filter((r) => r[0] === 'a1')).toEqual([
      ['a1', 'approved', null],
      ['a1', 'approved', null],
    ]);
    expect(receiver.events.find((e) => e.payload.type === 'transaction.rejected')).toBeDefined();
  });

  it('beforeResponse delivers the decision before /notify answers (the race the daemon must survive)', async () => {
    receiver = await startReceiver(DEFAULT_WEBHOOK_SECRET);
    sim = await startSimulator({ webhook: { url: receiver.url, beforeResponse: true } });
    const r = await post(sim, '/integration/v1/notify', valid('race'));
    expect(r.status).toBe(202);
    expect(receiver.events).toHaveLength(1); // already there when the 202 arrives
  });

  it('retries a failing receiver with backoff and gives up quietly when it stays down', async () => {
    receiver = await startReceiver(DEFAULT_WEBHOOK_SECRET);
    receiver.failNext(2);
    sim = await startSimulator({ webhook: { url: receiver.url, delayMs: 0, retryBaseMs: 1 } });
    await post(sim, '/integration/v1/notify', valid('retry'));
    await receiver.waitFor(1);
    await sim.webhooksIdle();
    expect(receiver.hits).toBe(3);
    expect(sim.webhooksSent[0]).toMatchObject({ delivered: true, attempts: 3 });

    const url = receiver.url;
    await receiver.close();
    receiver = undefined;
    sim.webhooks.configure({ url, maxAttempts: 3 });
    await post(sim, '/integration/v1/notify', valid('down'));
    await sim.webhooksIdle();
    expect(sim.webhooksSent[1]).toMatchObject({ delivered: false, attempts: 3 });
    expect(sim.webhooksSent[1]?.error).toBeTruthy();
  });

  it('retryMaxMs caps the doubling: a minute-long first retry delay waits 1 ms', async () => {
    receiver = await startReceiver(DEFAULT_WEBHOOK_SECRET);
    receiver.failNext(2);
    // Uncapped, the two retries would wait 60 s and 120 s, past the test's timeout.
    sim = await startSimulator({
      webhook: { url: receiver.url, delayMs: 0, retryBaseMs: 60_000, retryMaxMs: 1 },
    });
    await post(sim, '/integration/v1/notify', valid('capped'));
    await receiver.waitFor(1);
    await sim.webhooksIdle();
    expect(receiver.hits).toBe(3);
    expect(sim.webhooksSent[0]).toMatchObject({ delivered: true, attempts: 3 });
  });

  it('policy none and a missing url send nothing', async () => {
    receiver = await startReceiver(DEFAULT_WEBHOOK_SECRET);
    sim = await startSimulator({ webhook: { url: receiver.url, policy: 'none', delayMs: 0 } });
    await post(sim, '/integration/v1/notify', valid('n1'));
    await sim.webhooksIdle();
    expect(sim.webhooksSent).toHaveLength(0);
    expect(receiver.hits).toBe(0);
  });
});

describe('custody deposit webhook', () => {
  it('puts the ids in custody and sends a verified custody.deposit webhook (in-process and admin)', async () => {
    receiver = await startReceiver(DEFAULT_WEBHOOK_SECRET);
    sim = await startSimulator({ webhook: { url: receiver.url } });
    expect(
      (await fetch(`${sim.url}/integration/v1/projects/1040`, { headers: { apikey: KEY } })).status,
    ).toBe(404);
    const sent = await sim.sendDepositWebhook({
      projectID: 1040,
      issuanceId: '100040',
      unitIds: ['1000000400'],
    });
    expect(sent.delivered).toBe(true);
    expect(receiver.events[0]?.payload).toMatchObject({
      type: 'custody.deposit',
      data: { projectID: 1040, issuanceId: '100040', unitIds: ['1000000400'] },
    });
    expect(
      (await fetch(`${sim.url}/integration/v1/projects/1040`, { headers: { apikey: KEY } })).status,
    ).toBe(200);
    expect(
      (await fetch(`${sim.url}/integration/v1/units/1000000400`, { headers: { apikey: KEY } })).status,
    ).toBe(200);

    const r = await post(sim, '/_sim/webhooks/deposit', { unitIds: ['1000000404'] });
    expect(r.status).toBe(200);
    await receiver.waitFor(2);
    expect(receiver.events[1]?.payload.data).toEqual({ unitIds: ['1000000404'] });
  });
});
