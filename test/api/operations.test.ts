import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NOTIFICATION_FIELDS } from '../../src/outbox/validate.js';
import { PERSONAL, tokenization, transfer } from '../outbox/fixtures.js';
import { startApi, TOKEN } from './apiHarness.js';

let h: Awaited<ReturnType<typeof startApi>>;
beforeAll(async () => {
  h = await startApi();
});
afterAll(async () => {
  await h.close();
});

describe('internal API auth', () => {
  it('answers /healthz without a token and refuses everything else without the right one', async () => {
    expect((await h.call('GET', '/healthz', undefined, null)).status).toBe(200);
    expect((await h.call('GET', '/v1/operations', undefined, null)).status).toBe(401);
    expect((await h.call('GET', '/v1/operations', undefined, 'wrong-token')).status).toBe(401);
    expect((await h.call('POST', '/v1/operations', tokenization('auth-1'), 'wrong')).status).toBe(401);
    expect((await h.call('GET', '/v1/operations')).status).toBe(200);
  });

  it('refuses every call but /healthz when no token is configured', async () => {
    const open = await startApi({ 'api.token': undefined });
    try {
      const res = await open.call('GET', '/v1/operations', undefined, null);
      expect(res.status).toBe(401);
      expect(res.json.error).toMatch(/no token configured/);
    } finally {
      await open.close();
    }
  });
});

describe('POST /v1/operations', () => {
  it('201 queued, 200 same body again, 409 another body with the same ref', async () => {
    const first = await h.call('POST', '/v1/operations', transfer('idem-1'));
    expect(first.status).toBe(201);
    expect(first.json).toMatchObject({
      marketplaceTransactionRef: 'idem-1',
      state: 'queued',
      operationType: 'Transfer',
    });
    // Same meaning, other key order and spelling: still the same body.
    const reordered = Object.fromEntries(
      Object.entries(transfer('idem-1', { operationType: 'transfer' })).reverse(),
    );
    const again = await h.call('POST', '/v1/operations', reordered);
    expect(again.status).toBe(200);
    expect(again.json.id).toBe(first.json.id);
    const changed = await h.call('POST', '/v1/operations', transfer('idem-1', { transactionAmount: 11 }));
    expect(changed.status).toBe(409);
    expect(changed.json.error).toMatch(/idem-1 is already queued with a different body/);
    const count = h.ctx.database.sqlite
      .prepare('SELECT COUNT(*) AS n FROM outbox WHERE marketplaceTransactionRef = ?')
      .get('idem-1');
    expect(count).toEqual({ n: 1 });
  });

  it('fills marketplaceId from config and stores the configured wire spelling', async () => {
    const res = await h.call(
      'POST',
      '/v1/operations',
      tokenization('wire-1', { marketplaceId: undefined, operationType: 'RETIRE' }),
    );
    expect(res.status).toBe(201);
    expect(res.json.body).toMatchObject({ marketplaceId: 'mkt-default', operationType: 'retire' });
  });

  it('422 lists every field error with field and reason; 400 for a body that is not JSON', async () => {
    const res = await h.call(
      'POST',
      '/v1/operations',
      tokenization('bad-1', { transactionAmount: -1, extraField: 1 }),
    );
    expect(res.status).toBe(422);
    expect(res.json.errors).toEqual(
      expect.arrayContaining([
        { field: 'transactionAmount', reason: 'must be positive' },
        expect.objectContaining({ field: 'extraField' }),
      ]),
    );
    const notJson = await h.call('POST', '/v1/operations', '{"oops":');
    expect(notJson.status).toBe(400);
    expect(notJson.json.error).toMatch(/not valid JSON/);
  });

  it('reads a chunked body (no Content-Length) too, and refuses one over 1 MiB with 413', async () => {
    const chunked = (text: string, chunkBytes: number) =>
      fetch(`${h.base}/v1/operations`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` },
        body: new ReadableStream({
          start(controller) {
            const bytes = Buffer.from(text);
            for (let i = 0; i < bytes.length; i += chunkBytes)
              controller.enqueue(bytes.subarray(i, i + chunkBytes));
            controller.close();
          },
        }),
        duplex: 'half',
      } as RequestInit);
    const small = await chunked(JSON.stringify(tokenization('chunked-1')), 16);
    expect(small.status).toBe(201);
    expect(((await small.json()) as { marketplaceTransactionRef: string }).marketplaceTransactionRef).toBe(
      'chunked-1',
    );
    const huge = await chunked(
      JSON.stringify({ ...tokenization('chunked-2'), pad: 'x'.repeat(1_100_000) }),
      65_536,
    );
    expect(huge.status).toBe(413);
    // The same body with a Content-Length is refused before it is read.
    const declared = await h.call('POST', '/v1/operations', {
      ...tokenization('chunked-3'),
      pad: 'x'.repeat(1_100_000),
    });
    expect(declared.status).toBe(413);
    const stored = h.ctx.database.sqlite
      .prepare("SELECT COUNT(*) AS n FROM outbox WHERE marketplaceTransactionRef LIKE 'chunked-%'")
      .get();
    expect(stored).toEqual({ n: 1 });
  });

  it('100 concurrent enqueues of distinct refs all land exactly once', async () => {
    const refs = Array.from({ length: 100 }, (_, i) => `conc-${i}`);
    const answers = await Promise.all(refs.map((ref) => h.call('POST', '/v1/operations', tokenization(ref))));
    expect(answers.map((a) => a.status)).toEqual(refs.map(() => 201));
    const rows = h.ctx.database.sqlite
      .prepare(
        "SELECT marketplaceTransactionRef AS ref FROM outbox WHERE marketplaceTransactionRef LIKE 'conc-%'",
      )
      .all() as { ref: string }[];
    expect(rows.map((r) => r.ref).sort()).toEqual([...refs].sort());
  });

  it('does not show personal fields in answers', async () => {
    const res = await h.call('POST', '/v1/operations', transfer('masked-1'));
    expect(res.text).not.toContain(PERSONAL.originUserEmail);
    expect(res.json.body.originUserEmail).toBe('[redacted]');
    const shown = await h.call('GET', '/v1/operations/masked-1');
    expect(shown.text).not.toContain(PERSONAL.destinationUserDocId);
    // The stored body keeps them: they are for the operator.
    const stored = h.ctx.database.sqlite
      .prepare('SELECT body FROM outbox WHERE marketplaceTransactionRef = ?')
      .get('masked-1') as {
      body: string;
    };
    expect(JSON.parse(stored.body).originUserEmail).toBe(PERSONAL.originUserEmail);
  });
});

describe('property: generated notifications', () => {
  const word = fc.stringMatching(/^[A-Za-z0-9._-]{1,20}$/);
  const id = fc.integer({ min: 0, max: 1_000_000 });
  const base = fc.record({
    marketplaceTransactionRef: word.map((w) => `prop-${w}`),
    transactionAmount: fc.integer({ min: 1, max: 100_000 }),
    unitId: id,
    issuanceId: id,
    transactionTimestamp: fc
      .date({
        min: new Date('2000-01-01T00:00:00Z'),
        max: new Date('2100-01-01T00:00:00Z'),
        noInvalidDate: true,
      })
      .map((d) => d.toISOString()),
    transactionDescription: fc.string({ maxLength: 30 }),
  });
  const kindExtras = fc.constantFrom(
    { operationType: 'Tokenization' },
    { operationType: 'Transfer', originWallet: '0xa', destinationUserEmail: 'x@example.org' },
    { operationType: 'Retire', unitsRetirementNotes: 'notes' },
    { operationType: 'Detokenization', unitsAccountDestinationID: 9 },
  );
  const notification = fc.tuple(base, kindExtras, fc.constantFrom('tCO2e', 'kgCO2e')).map(([b, k, unit]) => ({
    ...b,
    ...k,
    transactionUnit: k.operationType === 'Detokenization' ? 'tCO2e' : unit,
  }));

  /** A value of the wrong type (or range) for each field. */
  function corrupt(field: string): unknown {
    if (field === 'transactionAmount') return -5;
    if (['unitId', 'issuanceId', 'unitsAccountDestinationID', 'unitsInternalAccountID'].includes(field))
      return 'not-a-number';
    if (field === 'operationType') return 'Teleport';
    if (field === 'transactionUnit') return 'tonnes';
    if (field === 'transactionTimestamp') return 'last tuesday';
    if (field === 'marketplaceTransactionRef') return '';
    return { nested: true };
  }

  it('every valid one is accepted; corrupting any single field gives 422 naming it', async () => {
    let n = 0;
    await fc.assert(
      fc.asyncProperty(notification, fc.nat(), async (valid, pick) => {
        n += 1;
        const ref = `${valid.marketplaceTransactionRef}-${n}`;
        const ok = await h.call('POST', '/v1/operations', { ...valid, marketplaceTransactionRef: ref });
        expect(ok.status, ok.text).toBe(201);
        const fields = Object.keys(valid);
        const field = fields[pick % fields.length]!;
        expect(NOTIFICATION_FIELDS).toContain(field);
        const bad = await h.call('POST', '/v1/operations', {
          ...valid,
          marketplaceTransactionRef: `${ref}-bad`,
          [field]: corrupt(field),
        });
        expect(bad.status, `${field}: ${bad.text}`).toBe(422);
        expect(bad.json.errors.map((e: { field: string }) => e.field)).toContain(field);
      }),
      { numRuns: 150 },
    );
  });
});

describe('steering over HTTP', () => {
  it('lists with a cursor and a state filter', async () => {
    for (let i = 0; i < 5; i++) await h.call('POST', '/v1/operations', tokenization(`page-${i}`));
    const seen: string[] = [];
    let cursor: string | null = '';
    while (cursor !== null) {
      const res = await h.call(
        'GET',
        `/v1/operations?state=queued&limit=2${cursor ? `&cursor=${cursor}` : ''}`,
      );
      expect(res.status).toBe(200);
      expect(res.json.items.length).toBeLessThanOrEqual(2);
      seen.push(
        ...res.json.items.map((e: { marketplaceTransactionRef: string }) => e.marketplaceTransactionRef),
      );
      cursor = res.json.nextCursor;
    }
    expect(seen).toEqual(expect.arrayContaining(['page-0', 'page-1', 'page-2', 'page-3', 'page-4']));
    expect(new Set(seen).size).toBe(seen.length);
    expect((await h.call('GET', '/v1/operations?state=bogus')).status).toBe(400);
  });

  it('cancel before acceptance, 409 after, 404 for an unknown ref; retry only failed', async () => {
    await h.call('POST', '/v1/operations', tokenization('steer-1'));
    const cancelled = await h.call('POST', '/v1/operations/steer-1/cancel');
    expect(cancelled.status).toBe(200);
    expect(cancelled.json.state).toBe('cancelled');
    expect((await h.call('POST', '/v1/operations/steer-1/retry')).status).toBe(409);
    expect((await h.call('POST', '/v1/operations/nope/cancel')).status).toBe(404);

    await h.call('POST', '/v1/operations', tokenization('steer-2'));
    h.ctx.database.sqlite
      .prepare("UPDATE outbox SET state = 'accepted' WHERE marketplaceTransactionRef = 'steer-2'")
      .run();
    const late = await h.call('POST', '/v1/operations/steer-2/cancel');
    expect(late.status).toBe(409);
    expect(late.json.error).toMatch(/already accepted/);

    await h.call('POST', '/v1/operations', tokenization('steer-3'));
    h.ctx.database.sqlite
      .prepare(
        "UPDATE outbox SET state = 'sending', lease_until = '2999-01-01T00:00:00.000Z' WHERE marketplaceTransactionRef = 'steer-3'",
      )
      .run();
    const busy = await h.call('POST', '/v1/operations/steer-3/cancel');
    expect(busy.status).toBe(409);
    expect(busy.json.error).toMatch(/being sent right now/);

    await h.call('POST', '/v1/operations', tokenization('steer-4'));
    h.ctx.database.sqlite
      .prepare(
        "UPDATE outbox SET state = 'failed', attempts = 30, finished_at = updated_at WHERE marketplaceTransactionRef = 'steer-4'",
      )
      .run();
    const retried = await h.call('POST', '/v1/operations/steer-4/retry');
    expect(retried.status).toBe(200);
    expect(retried.json).toMatchObject({ state: 'queued', attempts: 0, finished_at: null });
    expect(retried.json.retried_at).not.toBeNull();
  });
});
