import { describe, expect, it } from 'vitest';
import { pgUnavailableReason } from '../../src/postgres/faults.js';

const withCode = (code: string, message = 'server said no') => Object.assign(new Error(message), { code });

describe('pgUnavailableReason: which PostgreSQL errors are worth a retry (503), which are the request (500/400)', () => {
  it.each([
    ['connection failure class 08', withCode('08006'), 'the connection to the database failed'],
    ['admin shutdown', withCode('57P01'), 'the database server is shutting down'],
    ['crash shutdown', withCode('57P02'), 'the database server crashed'],
    ['starting up', withCode('57P03'), 'the database server is starting up'],
    ['too many connections', withCode('53300'), 'the database has no free connection'],
    ['serialization failure', withCode('40001'), 'the transaction lost a serialization race'],
    ['deadlock victim', withCode('40P01'), 'the transaction was chosen as a deadlock victim'],
    ['connection refused', withCode('ECONNREFUSED'), 'the database server cannot be reached'],
    ['connection reset', withCode('ECONNRESET'), 'the database server cannot be reached'],
    [
      'pool gave up',
      new Error('timeout exceeded when trying to connect'),
      'the connection to the database failed',
    ],
    [
      'connection cut',
      new Error('Connection terminated unexpectedly'),
      'the connection to the database failed',
    ],
  ])('%s: %s', (_name, err, reason) => {
    expect(pgUnavailableReason(err)).toBe(reason);
  });

  it.each([
    ['unique violation', withCode('23505')],
    ['syntax error', withCode('42601')],
    ['undefined table', withCode('42P01')],
    ['an error without a code', new Error('something else')],
    ['not an Error', 'ECONNREFUSED'],
    ['nothing', undefined],
  ])('%s is not a database outage', (_name, err) => {
    expect(pgUnavailableReason(err)).toBeNull();
  });
});
