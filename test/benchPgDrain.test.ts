import { describe, expect, it } from 'vitest';
import { settleArrays } from './bench/lib/pgBaselineDrain.js';

describe('the bare PostgreSQL drain baseline', () => {
  it('settles a batch as parallel unnest arrays in id order, each row keeping its own answer', () => {
    expect(
      settleArrays([
        { id: 9, status: 202, response: '{"n":9}' },
        { id: 2, status: 200, response: '{"n":2}' },
        { id: 5, status: 202, response: '' },
      ]),
    ).toEqual([
      [2, 5, 9],
      [200, 202, 202],
      ['{"n":2}', '', '{"n":9}'],
    ]);
  });

  it('an empty batch is three empty arrays', () => {
    expect(settleArrays([])).toEqual([[], [], []]);
  });
});
