import { expect } from 'vitest';
import { OperatorError } from '../../src/operator/operatorErrors.js';

/** The OperatorError `p` rejects with; fails the test if it resolves or rejects with anything else. */
export async function operatorFailure(p: Promise<unknown>): Promise<OperatorError> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(OperatorError);
    return err as OperatorError;
  }
  throw new Error('expected an OperatorError');
}
