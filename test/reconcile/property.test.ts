import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Books, hoursAfter, sqliteReconcileStore } from '../contract/reconcileStores.js';
import { openFindings } from '../contract/reconciliation.cases.js';
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
 * Issue 29's property: random sequences of operations and decisions against books kept
 * consistently (booksModel.ts) produce no finding; each injected inconsistency (a double
 * tokenization, a lost retirement, custody dropped, a retirement beyond what was tokenized)
 * produces exactly the finding that names it. Written into a real SQLite file through the real
 * writers (the operations store, the mirror store), then one full pass.
 */

/** After the retirement window and the deposits' days. */
const PASS_AT = hoursAfter(8 * 24);

/** The open findings after playing `commands` on books of `amountsT`, with `fault` injected. */
async function play(
  amountsT: readonly number[],
  commands: readonly Command[],
  fault: { kind: Fault; at: number } | null,
): Promise<{ open: string[]; expected: string[] }> {
  const { books: model, steps, pending } = stepsOf(amountsT, commands);
  const injection = fault ? inject(fault.kind, model, fault.at, steps.length) : null;
  const store = sqliteReconcileStore();
  try {
    const books = new Books(store);
    for (const b of model) {
      await books.issuance(b.id, b.amountKg / 1000);
      await books.custodyRead('issuances', b.id);
      await books.custodyRead('units', b.unit, b.id);
    }
    let minute = 0;
    const next = () => hoursAfter(++minute / 60);
    const report = (s: Step, at: string) =>
      books.report(
        {
          ref: s.ref,
          type: s.type,
          issuanceId: s.issuance.id,
          unitId: s.issuance.unit,
          amount: s.amount,
          unit: s.unit,
        },
        at,
      );
    const tokenized = new Set<string>();
    for (const s of [...steps, ...(injection?.steps ?? [])]) {
      const at = next();
      await report(s, at);
      await books.acceptAll(at);
      await books.decide(s.ref, s.decision === 'approved' ? 'approved' : 'rejected', at);
      if (s.decision !== 'approved') continue;
      if (s.type === 'Tokenization') tokenized.add(s.issuance.id);
      if (s.type === 'Retire' && s.logged) await books.logEntry(`L-${s.ref}`, s.issuance.id, s.kg / 1000);
    }
    // Deposits confirmed for what the marketplace then tokenized.
    for (const id of tokenized) await books.deposit('issuances', id, hoursAfter(0));
    if (injection?.dropped) await books.custodyEnded('issuances', injection.dropped.id, next());
    for (const s of pending) await report(s, next());
    await books.pass(PASS_AT);
    return { open: await openFindings(books), expected: injection?.expected ?? [] };
  } finally {
    await store.close();
  }
}

const commands = fc.array(commandArb, { minLength: 1, maxLength: 14 });

describe('reconciliation against consistent books', () => {
  it('random operations and decisions on consistent books: no finding', async () => {
    await fc.assert(
      fc.asyncProperty(amountsArb, commands, async (amounts, cmds) => {
        const { open } = await play(amounts, cmds, null);
        expect(open).toEqual([]);
      }),
      { numRuns: 30 },
    );
  });

  it('each injected inconsistency: exactly the finding that names it', async () => {
    const seen = new Set<Fault>();
    await fc.assert(
      fc.asyncProperty(
        amountsArb,
        commands,
        fc.constantFrom(...FAULTS),
        fc.nat(),
        async (amounts, cmds, kind, at) => {
          seen.add(kind);
          const { open, expected } = await play(amounts, cmds, { kind, at });
          expect(open).toEqual([...expected].sort());
        },
      ),
      { numRuns: 30 },
    );
    expect([...seen].sort()).toEqual([...FAULTS].sort());
  });
});
