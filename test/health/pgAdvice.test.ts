import { describe, expect, it } from 'vitest';
import { identityLine, identityOf } from '../../src/health/identity.js';
import { formatDuration } from '../../src/health/rules.js';
import { pgReadAdvice } from '../../src/postgres/healthAdvice.js';

/** PostgreSQL's own advice when status cannot read it, from the server's code or words (also wrapped). */

const pgError = (code: string, message: string) => Object.assign(new Error(message), { code });

describe('pgReadAdvice', () => {
  it('a refused login names user, password, pg_hba.conf and where the URL is set', () => {
    for (const err of [
      pgError('28P01', 'password authentication failed for user "vcu"'),
      pgError('28000', 'no pg_hba.conf entry for host "10.0.0.9", user "vcu", database "vcu"'),
      // As the CLI's connect error wraps it: the code is gone, the words remain.
      new Error(
        'database: cannot connect to PostgreSQL at db:5432/vcu: password authentication failed for user "vcu"',
      ),
      // As drizzle wraps it: the code is on the cause.
      Object.assign(new Error('Failed query: select 1'), { cause: pgError('28P01', 'x') }),
    ]) {
      const advice = pgReadAdvice(err);
      expect(advice).toMatch(/^PostgreSQL refused the login: check the user and password in database\.url/);
      expect(advice).toContain('VCU_SYNC_DATABASE_URL');
      expect(advice).toContain('pg_hba.conf');
    }
  });

  it('tells a missing database, missing tables, rights, a full server and TLS apart', () => {
    expect(pgReadAdvice(pgError('3D000', 'database "vcu" does not exist'))).toMatch(
      /does not exist on that server/,
    );
    expect(pgReadAdvice(pgError('42P01', 'relation "outbox" does not exist'))).toMatch(
      /has no vcu-sync tables/,
    );
    expect(pgReadAdvice(pgError('42501', 'permission denied for table outbox'))).toMatch(/may not read/);
    expect(pgReadAdvice(pgError('53300', 'sorry, too many clients already'))).toMatch(/max_connections/);
    expect(pgReadAdvice(new Error('The server does not support SSL connections'))).toMatch(/sslmode/);
  });

  it('anything else, a refused connection first, is "is the server up and is the URL right", never SQLite advice', () => {
    const advice = pgReadAdvice(pgError('ECONNREFUSED', 'connect ECONNREFUSED 127.0.0.1:5432'));
    expect(advice).toMatch(/^check that the PostgreSQL server is up and reachable/);
    expect(advice).toContain('database.url');
    expect(advice).not.toMatch(/kernel|permissions/);
  });
});

describe('identityLine read from another process', () => {
  const config = {
    status: { instance_name: 'cli' },
    operator: { url: undefined },
  } as unknown as Parameters<typeof identityOf>[0];
  const id = identityOf(config, { kind: 'postgres', location: 'db.example:5432/vcu' }, null, Date.now());

  it('on PostgreSQL counts the replicas alive instead of saying that no daemon runs', () => {
    expect(identityLine(id, formatDuration, [{ alive: true }, { alive: true }, { alive: false }])).toMatch(
      /postgres db\.example:5432\/vcu\), 2 replicas running$/,
    );
    expect(identityLine(id, formatDuration, [{ alive: true }])).toMatch(/, 1 replica running$/);
    expect(identityLine(id, formatDuration, [])).toMatch(/, no replica running$/);
  });

  it('on SQLite (no replicas) says whether its daemon runs', () => {
    expect(identityLine(id, formatDuration)).toMatch(/, daemon not running$/);
  });
});
