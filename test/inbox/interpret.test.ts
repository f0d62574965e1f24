import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.js';
import { interpretPayload } from '../../src/inbox/interpret.js';
import { classifyValue, compileVocabulary } from '../../src/inbox/vocabulary.js';

const webhook = loadConfig({ env: {}, overrides: {} }).webhook;
const fields = webhook.fields;
const vocabulary = compileVocabulary(webhook.decisions);
const read = (payload: Record<string, unknown>) => interpretPayload(payload, fields, vocabulary);

type Expect = 'approved' | 'rejected' | 'deposit' | 'undecided' | 'nothing';

/** What the interpreter makes of it: a decision, undecided (flagged), or nothing (ignored, not flagged). */
function outcomeOf(payload: Record<string, unknown>): Expect {
  const m = read(payload);
  if (m.undecided !== null) {
    expect(m.decision).toBeNull();
    return 'undecided';
  }
  return m.decision ?? 'nothing';
}

const REF = { marketplaceTransactionRef: 'r1' };

describe('decisions from the type alone (operation named)', () => {
  it.each<[string, Expect]>([
    ['transaction.approved', 'approved'],
    ['transaction.rejected', 'rejected'],
    ['TRANSACTION_APPROVED', 'approved'],
    ['Transaction.Rejected', 'rejected'],
    ['operation.approved', 'approved'],
    ['decision.rejected', 'rejected'],
    ['notification:approved', 'approved'],
    ['transaction-declined', 'rejected'],
    ['transaction.denied', 'rejected'],
    ['approved', 'approved'],
    ['APPROVED', 'approved'],
    ['Approved', 'approved'],
    ['  approved  ', 'approved'],
    ['approve', 'approved'],
    ['reject', 'rejected'],
    ['refused', 'rejected'],
    // Read, never guessed: each of these once approved by substring.
    ['disapproved', 'undecided'],
    ['not approved', 'undecided'],
    ['not.approved', 'undecided'],
    ['transaction.not_approved', 'undecided'],
    ['UNAPPROVED', 'undecided'],
    ['transaction.unapproved', 'undecided'],
    ['pending_approval', 'undecided'],
    ['approval_revoked', 'undecided'],
    ['transaction.approval_revoked', 'undecided'],
    ['transaction.rejected_after_approval_review', 'undecided'],
    ['transaction.approved.reverted', 'undecided'],
    ['approved.transaction', 'undecided'],
    ['operation.approval', 'undecided'],
    ['preapproved', 'undecided'],
    ['approvedx', 'undecided'],
    ['non-rejected', 'undecided'],
    // "accepted" is the operator's 2xx, not an approval.
    ['accepted', 'undecided'],
    ['transaction.accepted', 'undecided'],
    ['transaction.updated', 'undecided'],
    ['transaction.pending', 'nothing'],
    ['...', 'undecided'],
  ])('type %j → %s', (type, expected) => {
    expect(outcomeOf({ type, data: REF })).toBe(expected);
  });
});

describe('decisions from the status (generic type, or none)', () => {
  it.each<[string, Expect]>([
    ['approved', 'approved'],
    ['APPROVED', 'approved'],
    ['Approved', 'approved'],
    ['Rejected', 'rejected'],
    ['DECLINED', 'rejected'],
    ['denied', 'rejected'],
    ['disapproved', 'undecided'],
    ['not approved', 'undecided'],
    ['UNAPPROVED', 'undecided'],
    ['pending_approval', 'undecided'],
    ['approval_revoked', 'undecided'],
    ['accepted', 'undecided'],
    ['ok', 'undecided'],
    // Prefixes are for event types only.
    ['transaction.approved', 'undecided'],
    ['pending', 'nothing'],
    ['Processing', 'nothing'],
  ])('status %j → %s', (status, expected) => {
    expect(outcomeOf({ type: 'transaction.updated', data: { ...REF, status } })).toBe(expected);
    expect(outcomeOf({ ...REF, status })).toBe(expected);
  });
});

describe('type and status together', () => {
  it.each<[string, string, Expect]>([
    ['transaction.approved', 'approved', 'approved'],
    ['transaction.rejected', 'REJECTED', 'rejected'],
    ['transaction.approved', 'rejected', 'undecided'],
    ['transaction.rejected', 'approved', 'undecided'],
    ['transaction.approved', 'pending', 'undecided'],
    ['transaction.approved', 'not approved', 'undecided'],
    ['transaction.approved', 'accepted', 'undecided'],
    ['transaction.rejected_after_approval_review', 'rejected', 'rejected'],
    ['transaction.decided', 'approved', 'approved'],
    ['transaction.pending', 'pending', 'nothing'],
    ['custody.deposit', 'approved', 'undecided'],
  ])('type %j, status %j → %s', (type, status, expected) => {
    expect(outcomeOf({ type, data: { ...REF, status } })).toBe(expected);
  });
});

describe('events that name no operation', () => {
  it.each<[Record<string, unknown>, Expect]>([
    [{}, 'nothing'],
    [{ type: 'ping' }, 'nothing'],
    [{ type: 'ping', status: 'ok' }, 'nothing'],
    [{ type: 'custody.withdrawal', projectID: 3 }, 'nothing'],
    [{ type: 'custody.deposit', projectID: 3 }, 'deposit'],
    [{ type: 'CUSTODY_DEPOSIT', unitIds: [1] }, 'deposit'],
    [{ type: 'units.deposited', unitIds: [1] }, 'deposit'],
    [{ type: 'custody.deposit', status: 'confirmed', projectID: 3 }, 'deposit'],
    [{ type: 'custody.event', status: 'deposited', projectID: 3 }, 'deposit'],
    [{ type: 'custody.deposit', status: 'rejected' }, 'undecided'],
    [{ type: 'transaction.approved', status: 'rejected' }, 'undecided'],
    // Decides, but there is no operation to apply it to: the recorder ignores it.
    [{ type: 'transaction.approved' }, 'approved'],
  ])('%j → %s', (payload, expected) => {
    expect(outcomeOf(payload)).toBe(expected);
  });

  it('names an operation but says nothing: undecided', () => {
    expect(read({ data: REF })).toMatchObject({
      decision: null,
      undecided: 'names an operation but carries no type or status',
    });
  });
});

describe('interpretPayload', () => {
  it('reads the simulator shape: type, status, ref under data, reason', () => {
    expect(
      read({
        type: 'transaction.rejected',
        data: {
          marketplaceTransactionRef: 'r1',
          transactionReferenceId: 'op-r1',
          status: 'rejected',
          reason: 'no',
        },
      }),
    ).toEqual({
      type: 'transaction.rejected',
      status: 'rejected',
      ref: 'r1',
      decision: 'rejected',
      reason: 'no',
      deposit: null,
      undecided: null,
    });
  });

  it('says why, with the words, and keeps the reason of an undecided event', () => {
    expect(
      read({ type: 'transaction.updated', data: { ...REF, status: 'UNAPPROVED', reason: 'why not' } }),
    ).toEqual({
      type: 'transaction.updated',
      status: 'UNAPPROVED',
      ref: 'r1',
      decision: null,
      reason: 'why not',
      deposit: null,
      undecided: 'status "UNAPPROVED" is in no webhook.decisions list',
    });
    expect(read({ type: 'transaction.approved', data: { ...REF, status: 'rejected' } }).undecided).toBe(
      'type "transaction.approved" and status "rejected" disagree',
    );
  });

  it('prefers a top-level field over data, and falls back through the field list', () => {
    expect(
      read({
        type: 'approved',
        marketplaceTransactionRef: 'top',
        data: { marketplaceTransactionRef: 'nested' },
      }).ref,
    ).toBe('top');
    expect(read({ type: 'approved', transactionReferenceId: 12 }).ref).toBe('12');
  });

  it('reads deposit ids as text, scalar or list, de-duplicated, at top level or under data', () => {
    const m = read({
      event: 'custody.deposit',
      projectID: 3,
      data: { issuanceId: '44', unitIds: [1, '1', 2, null, { x: 1 }] },
    });
    expect(m.decision).toBe('deposit');
    expect(m.deposit).toEqual({ projects: ['3'], issuances: ['44'], units: ['1', '2'] });
  });

  it('ignores values of the wrong type rather than failing', () => {
    expect(read({ type: ['approved'], marketplaceTransactionRef: { a: 1 }, status: true })).toEqual({
      type: null,
      status: null,
      ref: null,
      decision: null,
      reason: null,
      deposit: null,
      undecided: null,
    });
  });
});

describe('the vocabulary is configuration', () => {
  const custom = loadConfig({
    env: {},
    overrides: {
      'webhook.decisions': {
        approved: ['accepted', 'OK'],
        rejected: ['not approved', 'KO'],
        neutral: ['pending approval'],
        type_prefixes: ['tx'],
      },
    },
  }).webhook;
  const v = compileVocabulary(custom.decisions);

  it('matches the configured words whole, in any case and separator', () => {
    expect(classifyValue('Accepted', v, false)).toBe('approved');
    expect(classifyValue('ok', v, false)).toBe('approved');
    expect(classifyValue('NOT_APPROVED', v, false)).toBe('rejected');
    expect(classifyValue('tx.not-approved', v, true)).toBe('rejected');
    expect(classifyValue('tx.not-approved', v, false)).toBe('unknown');
    expect(classifyValue('pending_approval', v, false)).toBe('neutral');
    // Unset lists keep their defaults; an unlisted prefix does not match.
    expect(classifyValue('deposited', v, false)).toBe('deposit');
    expect(classifyValue('transaction.ok', v, true)).toBe('unknown');
    expect(classifyValue('okay', v, true)).toBe('unknown');
  });

  it('refuses a word in two lists, naming the key', () => {
    expect(() =>
      loadConfig({
        env: {},
        overrides: { 'webhook.decisions': { approved: ['ok'], rejected: ['fine', 'OK'] } },
      }),
    ).toThrow('config: webhook.decisions.rejected[1]: "OK" is also in webhook.decisions.approved');
    expect(() =>
      loadConfig({ env: {}, overrides: { 'webhook.decisions': { neutral: ['transaction'] } } }),
    ).toThrow(/webhook\.decisions\.type_prefixes\[0\]: "transaction" is also in webhook\.decisions\.neutral/);
    expect(() => loadConfig({ env: {}, overrides: { 'webhook.decisions': { approved: ['._'] } } })).toThrow(
      'config: webhook.decisions.approved[0]: expected a word, not only separators',
    );
  });
});

describe('the vocabulary remembers what it classified', () => {
  const words = fc.oneof(
    fc.constantFrom('approved', 'rejected', 'transaction.approved', 'tx.rejected', 'deposit', 'pending'),
    fc.string({ maxLength: 30 }),
    fc.string({ minLength: 101, maxLength: 120 }),
  );

  it('answers as a vocabulary without memory, first call or later, type or status', () => {
    const remembering = compileVocabulary(webhook.decisions);
    const { memo: _, ...fresh } = compileVocabulary(webhook.decisions);
    fc.assert(
      fc.property(fc.array(fc.tuple(words, fc.boolean()), { maxLength: 20 }), (calls) => {
        for (const [value, asType] of [...calls, ...calls]) {
          expect(classifyValue(value, remembering, asType)).toBe(classifyValue(value, fresh, asType));
        }
      }),
    );
  });

  it('stays bounded whatever a sender varies, and keeps no long value', () => {
    const remembering = compileVocabulary(webhook.decisions);
    for (let i = 0; i < 5_000; i++) classifyValue(`transaction.approved.${i}`, remembering, true);
    classifyValue('x'.repeat(500), remembering, false);
    expect(remembering.memo!.size).toBeLessThanOrEqual(256);
    expect([...remembering.memo!.keys()].every((key) => key.length <= 101)).toBe(true);
  });
});
