import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { openPostgres } from '../../src/postgres/open.js';
import { type Cluster, createTestDatabase, startCluster, type TestDatabase } from '../helpers/postgres.js';

/**
 * `sslmode` read as libpq reads it, against two real servers: the run's cluster (no TLS) and one
 * started here with TLS and a self-signed certificate.
 */

/** Whether the pool's own session is encrypted, as the server sees it. */
async function encrypted(url: string): Promise<boolean> {
  const store = await openPostgres(url, { migrate: false, max: 1 });
  try {
    const { rows } = await store.pool.query<{ ssl: boolean }>(
      'SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()',
    );
    return rows[0]?.ssl ?? false;
  } finally {
    await store.close();
  }
}

async function failure(url: string): Promise<string> {
  return openPostgres(url, { migrate: false }).then(
    async (store) => {
      await store.close();
      return 'connected';
    },
    (err: Error) => err.message,
  );
}

describe('sslmode against a server without TLS', () => {
  const cluster = inject('postgres');
  let database: TestDatabase;
  beforeAll(async () => {
    database = await createTestDatabase(cluster);
  });
  afterAll(() => database?.drop());

  it('falls back to plain text with no sslmode (libpq prefer), with prefer and with allow', async () => {
    expect(await encrypted(database.urlWith({}))).toBe(false);
    expect(await encrypted(database.urlWith({ sslmode: 'prefer' }))).toBe(false);
    expect(await encrypted(database.urlWith({ sslmode: 'allow' }))).toBe(false);
  });

  it('refuses to go on without TLS when told to require it: one line, no password', async () => {
    const message = await failure(database.urlWith({ sslmode: 'require' }));
    expect(message).toBe(
      `database: cannot connect to PostgreSQL at 127.0.0.1:${cluster.port}/${database.name}: The server does not support SSL connections`,
    );
  });

  it('names a wrong password as the server does, without the password', async () => {
    const url = new URL(database.url);
    url.password = 'wrong-password-42';
    const message = await failure(url.toString());
    expect(message).toMatch(/password authentication failed for user "vcu_sync"$/);
    expect(message).not.toContain('wrong-password-42');
  });
});

describe('sslmode against a server with TLS (self-signed certificate)', () => {
  let tls: Cluster;
  let database: TestDatabase;
  beforeAll(async () => {
    tls = await startCluster({ tls: true });
    database = await createTestDatabase(tls.info);
  });
  afterAll(() => tls?.stop());

  it('encrypts with no sslmode (prefer), require, verify-ca and verify-full given the CA; not with disable', async () => {
    const ca = tls.info.certFile as string;
    expect(await encrypted(database.urlWith({}))).toBe(true);
    expect(await encrypted(database.urlWith({ sslmode: 'require' }))).toBe(true);
    expect(await encrypted(database.urlWith({ sslmode: 'verify-ca', sslrootcert: ca }))).toBe(true);
    expect(await encrypted(database.urlWith({ sslmode: 'verify-full', sslrootcert: ca }))).toBe(true);
    expect(await encrypted(database.urlWith({ sslmode: 'disable' }))).toBe(false);
  });

  it('refuses a certificate it cannot verify under verify-full', async () => {
    expect(await failure(database.urlWith({ sslmode: 'verify-full' }))).toMatch(
      new RegExp(
        `^database: cannot connect to PostgreSQL at 127\\.0\\.0\\.1:${tls.info.port}/${database.name}: .*self-signed`,
      ),
    );
  });

  it('says in one line what verify-ca needs, and which certificate file it cannot read', async () => {
    expect(await failure(database.urlWith({ sslmode: 'verify-ca' }))).toBe(
      'database.url: sslmode=verify-ca needs sslrootcert=FILE (the CA that signed the server certificate)',
    );
    expect(
      await failure(database.urlWith({ sslmode: 'verify-full', sslrootcert: '/nonexistent/ca.crt' })),
    ).toBe('database.url: cannot read /nonexistent/ca.crt (ENOENT)');
  });
});
