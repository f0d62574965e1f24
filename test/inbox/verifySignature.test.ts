import { createHmac } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import {
  createVerifier,
  type HeaderReader,
  signStandardWebhook,
  standardWebhooksKey,
  type VerifierOptions,
} from '../../src/inbox/verifySignature.js';
import { OTHER_SECRET, SECRET, signed } from './helpers.js';

const NOW = Date.parse('2026-03-01T12:00:00.000Z');
const reader =
  (headers: Record<string, string>): HeaderReader =>
  (name) =>
    headers[name];
const bytes = (s: string) => Buffer.from(s, 'utf8');
const standard = (secrets: string[], tolerance = 300) =>
  createVerifier({ scheme: 'standard-webhooks', secrets, toleranceSeconds: tolerance });

// The Standard Webhooks reference vector (standard-webhooks/standard-webhooks, libraries/javascript/src/webhook.test.ts).
const VECTOR = {
  secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
  id: 'msg_p5jXN8AQM9LWM0D4loKWxJek',
  timestamp: 1614265330,
  payload: '{"test": 2432232314}',
  signature: 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
};

describe('Standard Webhooks reference vectors', () => {
  const headers = {
    'webhook-id': VECTOR.id,
    'webhook-timestamp': String(VECTOR.timestamp),
    'webhook-signature': VECTOR.signature,
  };
  const at = VECTOR.timestamp * 1000;

  it('signs the reference message to the reference signature', () => {
    expect(
      signStandardWebhook(
        standardWebhooksKey(VECTOR.secret),
        VECTOR.id,
        VECTOR.timestamp,
        bytes(VECTOR.payload),
      ),
    ).toBe(VECTOR.signature);
  });

  it('accepts the reference signature, with or without the whsec_ prefix', () => {
    for (const secret of [VECTOR.secret, VECTOR.secret.slice('whsec_'.length)]) {
      expect(standard([secret])(reader(headers), bytes(VECTOR.payload), at)).toEqual({
        ok: true,
        webhookId: VECTOR.id,
      });
    }
  });

  it('accepts one valid signature among several (v2 and wrong v1 ignored)', () => {
    const sigs = [
      'v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc=',
      'v2,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc=',
      VECTOR.signature,
      'v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc=',
    ].join(' ');
    const r = standard([VECTOR.secret])(
      reader({ ...headers, 'webhook-signature': sigs }),
      bytes(VECTOR.payload),
      at,
    );
    expect(r.ok).toBe(true);
  });

  it.each([
    ['invalid signature', { 'webhook-signature': 'v1,dawfeoifkpqwoekfpqoekf' }],
    ['partial signature', { 'webhook-signature': VECTOR.signature.slice(0, 8) }],
    ['empty v1 signature', { 'webhook-signature': 'v1,' }],
    ['only a v2 signature', { 'webhook-signature': VECTOR.signature.replace('v1,', 'v2,') }],
    ['non-numeric timestamp', { 'webhook-timestamp': 'hello' }],
  ])('refuses an %s', (_name, patch) => {
    const r = standard([VECTOR.secret])(reader({ ...headers, ...patch }), bytes(VECTOR.payload), at);
    expect(r).toMatchObject({ ok: false, status: 401 });
  });

  it.each(['webhook-id', 'webhook-timestamp', 'webhook-signature'])('refuses when %s is missing', (name) => {
    const copy: Record<string, string> = { ...headers };
    delete copy[name];
    const r = standard([VECTOR.secret])(reader(copy), bytes(VECTOR.payload), at);
    expect(r).toMatchObject({ ok: false, status: 401, reason: expect.stringContaining('missing') });
  });

  it('refuses a changed body', () => {
    const r = standard([VECTOR.secret])(reader(headers), bytes('{"test": 2432232315}'), at);
    expect(r).toEqual({ ok: false, status: 401, reason: 'no matching signature' });
  });
});

describe('standard-webhooks against the official library as sender', () => {
  it('accepts what Webhook.sign produced, and the library accepts what we sign', () => {
    const msg = signed({ type: 'x' }, { id: 'msg_1', atMs: NOW });
    expect(standard([SECRET])(reader(msg.headers), bytes(msg.body), NOW)).toEqual({
      ok: true,
      webhookId: 'msg_1',
    });
    const ours = signStandardWebhook(
      standardWebhooksKey(SECRET),
      'msg_2',
      Math.floor(Date.now() / 1000),
      bytes(msg.body),
    );
    const headers = {
      'webhook-id': 'msg_2',
      'webhook-timestamp': String(Math.floor(Date.now() / 1000)),
      'webhook-signature': ours,
    };
    expect(() => new Webhook(SECRET).verify(msg.body, headers)).not.toThrow();
  });

  it('accepts during key rotation: any configured secret, any offered signature', () => {
    const msg = signed({ a: 1 }, { atMs: NOW, secret: OTHER_SECRET });
    expect(standard([SECRET, OTHER_SECRET])(reader(msg.headers), bytes(msg.body), NOW).ok).toBe(true);
    expect(standard([SECRET])(reader(msg.headers), bytes(msg.body), NOW)).toMatchObject({
      ok: false,
      status: 401,
    });
  });

  it('refuses a wrong secret', () => {
    const msg = signed({ a: 1 }, { atMs: NOW, secret: OTHER_SECRET });
    expect(standard([SECRET])(reader(msg.headers), bytes(msg.body), NOW)).toEqual({
      ok: false,
      status: 401,
      reason: 'no matching signature',
    });
  });

  it('enforces the tolerance both ways, inclusive at the edge', () => {
    const verify = standard([SECRET], 300);
    const at = (offsetSeconds: number) => {
      const msg = signed({ a: 1 }, { atMs: NOW + offsetSeconds * 1000 });
      return verify(reader(msg.headers), bytes(msg.body), NOW);
    };
    expect(at(-300).ok).toBe(true);
    expect(at(300).ok).toBe(true);
    expect(at(-301)).toMatchObject({ ok: false, reason: expect.stringContaining('too old') });
    expect(at(301)).toMatchObject({ ok: false, reason: expect.stringContaining('future') });
  });
});

describe('hmac scheme', () => {
  const key = 'plain-hmac-secret';
  const opts = (patch: Partial<VerifierOptions> = {}): VerifierOptions => ({
    scheme: 'hmac',
    secrets: [key],
    toleranceSeconds: 300,
    ...patch,
  });
  const body = bytes('{"type":"transaction.approved"}');

  it('accepts hex (also with a sha256= prefix, any case) and base64', () => {
    const hex = createHmac('sha256', key).update(body).digest('hex');
    const verify = createVerifier(opts());
    expect(verify(reader({ 'x-signature': hex }), body, NOW).ok).toBe(true);
    expect(verify(reader({ 'x-signature': `sha256=${hex.toUpperCase()}` }), body, NOW).ok).toBe(true);
    const b64 = createHmac('sha256', key).update(body).digest('base64');
    expect(
      createVerifier(opts({ hmacEncoding: 'base64' }))(reader({ 'x-signature': b64 }), body, NOW).ok,
    ).toBe(true);
    expect(verify(reader({ 'x-signature': b64 }), body, NOW).ok).toBe(false);
  });

  it('signs "timestamp.body" when a timestamp header is configured, and checks its age', () => {
    const verify = createVerifier(opts({ hmacTimestampHeader: 'X-Timestamp' }));
    const ts = Math.floor(NOW / 1000);
    const sig = createHmac('sha256', key).update(`${ts}.`).update(body).digest('hex');
    expect(verify(reader({ 'x-signature': sig, 'x-timestamp': String(ts) }), body, NOW).ok).toBe(true);
    expect(
      verify(reader({ 'x-signature': sig, 'x-timestamp': String(ts) }), body, NOW + 301_000),
    ).toMatchObject({ ok: false });
    expect(verify(reader({ 'x-signature': sig }), body, NOW)).toMatchObject({
      ok: false,
      reason: 'missing timestamp header',
    });
    const bodyOnly = createHmac('sha256', key).update(body).digest('hex');
    expect(verify(reader({ 'x-signature': bodyOnly, 'x-timestamp': String(ts) }), body, NOW).ok).toBe(false);
  });

  it('uses the id header when sent, else a hash of the body', () => {
    const hex = createHmac('sha256', key).update(body).digest('hex');
    const verify = createVerifier(opts());
    expect(verify(reader({ 'x-signature': hex, 'webhook-id': 'evt-9' }), body, NOW)).toEqual({
      ok: true,
      webhookId: 'evt-9',
    });
    const r = verify(reader({ 'x-signature': hex }), body, NOW);
    expect(r.ok && r.webhookId).toMatch(/^sha256:[0-9a-f]{64}$/);
  });
});

describe('token and none schemes', () => {
  it('token: accepts any configured token, refuses others and a missing header', () => {
    const verify = createVerifier({
      scheme: 'token',
      secrets: ['tok-one-123', 'tok-two-456'],
      toleranceSeconds: 300,
    });
    const body = bytes('{}');
    expect(verify(reader({ 'x-webhook-token': 'tok-two-456' }), body, NOW).ok).toBe(true);
    expect(verify(reader({ 'x-webhook-token': 'tok-two-45' }), body, NOW)).toMatchObject({
      ok: false,
      status: 401,
    });
    expect(verify(reader({}), body, NOW)).toMatchObject({
      ok: false,
      reason: 'missing x-webhook-token header',
    });
  });

  it('none: accepts anything; other schemes refuse to start without secrets', () => {
    expect(
      createVerifier({ scheme: 'none', secrets: [], toleranceSeconds: 1 })(reader({}), bytes('{}'), NOW).ok,
    ).toBe(true);
    expect(() => createVerifier({ scheme: 'standard-webhooks', secrets: [], toleranceSeconds: 1 })).toThrow(
      /webhook.secrets is empty/,
    );
  });
});
