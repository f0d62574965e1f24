import { describe, expect, it } from 'vitest';
import { isoAt } from '../../src/common/clock.js';
import {
  maskDeep,
  REDACTED,
  redactDeep,
  registerSecret,
  scrubText,
  TOO_DEEP,
} from '../../src/common/redact.js';
import { maskReceived, personalMasker, personalValues } from '../../src/operations/personal.js';
import { sqliteOutboxHooks } from '../../src/sqlite/operationsStore.js';
import { testContext } from '../helpers/context.js';
import { capturingLogger, enqueueOperation, transfer } from '../outbox/fixtures.js';
import { everyCell, findAll, formsOf, hostilePeople, keyNeedles, personalNeedles } from './leaks.js';

const KEY = 'pk_Test/Unit+Key=9876543210zyxw';
registerSecret(KEY);

describe('secrets in their encodings', () => {
  it('masks the key raw, in any case, URL-encoded, JSON-escaped, hex and base64 at any alignment', () => {
    const b64 = (s: string) => Buffer.from(s).toString('base64');
    const quoted = [
      KEY,
      KEY.toUpperCase(),
      KEY.toLowerCase(),
      encodeURIComponent(KEY),
      Buffer.from(KEY).toString('hex').toUpperCase(),
      b64(KEY),
      b64(KEY).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, ''),
      b64(`marketplace:${KEY}`), // Basic auth: the key at another byte alignment
      b64(`mk:${KEY}`),
      b64(`m:${KEY}`),
    ];
    for (const q of quoted) {
      const out = scrubText(`401 Unauthorized: credentials ${q} rejected`);
      expect(out, q).toContain(REDACTED);
      expect(findAll([{ where: q, text: out }], keyNeedles(KEY))).toEqual([]);
    }
  });

  it('leaves ordinary text alone', () => {
    const text = 'operator answered 503: Service temporarily unavailable (retry in 2s)';
    expect(scrubText(text)).toBe(text);
  });
});

describe('structural mask', () => {
  it('masks personal and secret keys at any depth and spelling, arrays included', () => {
    const value = {
      data: [{ user: { origin_user_email: 'a@b.c', 'Destination-User-Name': 'X Y', apiKey: 'k' } }],
      reason: `bad key ${KEY}`,
    };
    const masked = JSON.stringify(redactDeep(value));
    expect(masked).not.toContain('a@b.c');
    expect(masked).not.toContain('X Y');
    expect(masked).not.toContain(KEY);
    expect(masked).toContain('"origin_user_email":"[redacted]"');
  });

  it('replaces what lies beyond the depth bound instead of passing it through', () => {
    let deep: unknown = { originUserName: 'Deep Secret Person', note: 'Deep Secret Person' };
    for (let i = 0; i < 100; i++) deep = i % 2 ? { nested: deep } : [deep];
    const mask = personalMasker(['Deep Secret Person']);
    const out = JSON.stringify(maskDeep(deep, { text: mask, maxDepth: 40 }));
    expect(out).not.toContain('Deep Secret Person');
    expect(out).toContain(TOO_DEEP);
    const cyclic: Record<string, unknown> = { a: 'x' };
    cyclic.self = cyclic;
    expect(maskDeep(cyclic, {})).toEqual({ a: 'x', self: TOO_DEEP });
  });

  it('keeps a logger line free of a personal field nested deeper than the old bound', () => {
    const { log, lines } = capturingLogger();
    let payload: unknown = { originUserDocId: 'DOC-DEEP-4242' };
    for (let i = 0; i < 12; i++) payload = { inner: payload };
    log.info(
      { event: 'test.deep', payload, err: new Error(`key ${Buffer.from(KEY).toString('base64')}`) },
      'x',
    );
    expect(lines.join('')).not.toContain('DOC-DEEP-4242');
    expect(lines.join('')).not.toContain(Buffer.from(KEY).toString('base64'));
  });
});

describe('personal values in text', () => {
  const people = hostilePeople(9);
  const mask = personalMasker(personalValues(people));

  it('masks each hostile value in every form and case other software quotes it in', () => {
    for (const value of Object.values(people)) {
      for (const form of [...formsOf(value), value.toUpperCase(), value.normalize('NFD')]) {
        const out = mask(`operator said: «${form}» is unknown`);
        expect(out, JSON.stringify(form)).toBe(`operator said: «${REDACTED}» is unknown`);
      }
    }
  });

  it('masks a JSON answer by key and by value, and plain text by value', () => {
    const answer = JSON.stringify({
      accepted: true,
      echo: { ...people, nested: [{ holder: people.originUserName }] },
      message: `registered for ${people.destinationUserEmail}`,
    });
    const out = maskReceived(answer, mask);
    expect(findAll([{ where: 'answer', text: out }], personalNeedles([people]))).toEqual([]);
    expect(JSON.parse(out)).toMatchObject({ accepted: true, echo: { originUserEmail: REDACTED } });
    const html = `<p>No account for ${people.originUserName.replace(/"/g, '&quot;').replace(/'/g, '&#39;')}</p>`;
    expect(maskReceived(html, mask)).toBe(`<p>No account for ${REDACTED}</p>`);
  });
});

describe('scrub', () => {
  it('clears every column of a finished row and its webhook events, not only the body', async () => {
    const ctx = testContext({ overrides: { 'operator.marketplace_id': 'mkt-1' } });
    try {
      const people = hostilePeople(3);
      const input = { ...transfer('scrub-all-1'), ...people };
      expect(enqueueOperation(ctx, input).status).toBe(201);
      expect(enqueueOperation(ctx, { ...transfer('scrub-open-2'), ...hostilePeople(4) }).status).toBe(201);
      const db = ctx.database.sqlite;
      const hashBefore = db.prepare(`SELECT body_hash FROM outbox WHERE id = 1`).pluck().get();
      // As an older version stored them: the operator's echoes verbatim in every text column.
      const echo = JSON.stringify({ message: `bad ${people.originUserName}`, request: people });
      const old = isoAt(Date.parse('2026-01-01T00:00:00Z'));
      db.prepare(
        `UPDATE outbox SET state = 'rejected', response = @echo, last_error = @echo, decision_reason = @echo,
           finished_at = @old, decided_at = @old WHERE id = 1`,
      ).run({ echo, old });
      db.prepare(
        `INSERT INTO outbox_attempts (outbox_id, started_at, duration_ms, status_code, error) VALUES (1, @old, 5, 422, @echo)`,
      ).run({ old, echo });
      db.prepare(
        `INSERT INTO webhook_events (webhook_id, received_at, marketplaceTransactionRef, decision, reason, body, outcome)
         VALUES ('msg_1', @old, 'scrub-all-1', 'rejected', @reason, @echo, 'applied')`,
      ).run({ old, echo, reason: `no funds for ${people.destinationUserEmail}` });

      const scrubbed = await sqliteOutboxHooks(db).scrubFinished(Date.parse('2026-03-01T00:00:00Z'), 30);
      expect(scrubbed).toBe(1);
      const cells = everyCell(ctx.database.path);
      const mine = personalNeedles([people], false);
      const left = findAll(cells, mine);
      expect(left.map((f) => `${f.where}: ${f.needle}`)).toEqual([]);
      // The open row keeps its body for the operator; the scrubbed one keeps its hash for a repeat.
      expect(findAll(cells, personalNeedles([hostilePeople(4)])).map((f) => f.where)).toContain(
        'outbox.body',
      );
      expect(db.prepare(`SELECT body_hash FROM outbox WHERE id = 1`).pluck().get()).toBe(hashBefore);
      expect(enqueueOperation(ctx, input).status).toBe(200);
      expect(await sqliteOutboxHooks(db).scrubFinished(Date.parse('2026-03-01T00:00:00Z'), 30)).toBe(0);
    } finally {
      ctx.dispose();
    }
  });
});
