import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/common/errors.js';
import { loadConfig } from '../../src/config/config.js';
import { OperatorClient, truncatedMarker } from '../../src/operator/client.js';
import { UnreadableRecord } from '../../src/operator/limits.js';
import {
  gzipBomb,
  type HostileServer,
  json,
  project,
  startHostileServer,
  streamed,
} from './hostileServer.js';

const MiB = 1024 * 1024;
let server: HostileServer;

beforeAll(async () => {
  server = await startHostileServer();
});
afterAll(async () => {
  await server.close();
});

function client(extra: Partial<ConstructorParameters<typeof OperatorClient>[0]> = {}) {
  return new OperatorClient({ baseUrl: server.url, ratePerSecond: 1000, timeoutMs: 20_000, ...extra });
}

async function collect(records: readonly unknown[] | AsyncIterable<unknown>): Promise<unknown[]> {
  const out: unknown[] = [];
  for await (const r of records) out.push(r);
  return out;
}

describe('operator answers past the limits', () => {
  it('reads no more than max_record_bytes of a 400 MB data read, and answers it as unreadable', async () => {
    server.on('/p/big', streamed(`{"projectID":"1","pad":"`, Buffer.alloc(64 * 1024, 0x30), 400 * MiB, '"}'));
    const c = client();
    const value = await c.getOne('project', '/p/big');
    c.close();
    expect(value).toBeInstanceOf(UnreadableRecord);
    expect((value as UnreadableRecord).reason).toBe(
      'record larger than operator.max_record_bytes (1048576 bytes)',
    );
    // The server stopped long before 400 MB: the client hung up (socket buffers hold a few MB).
    expect(server.sent.get('/p/big')!).toBeLessThan(64 * MiB);
  });

  it('counts decompressed bytes: a gzip bomb of 2.2 GB is cut at the limit', async () => {
    server.on('/p/bomb', gzipBomb('{"projectID":"2","pad":"', 2200 * MiB, '"}'));
    const c = client({ maxRecordBytes: 256 * 1024 });
    const value = await c.getOne('project', '/p/bomb');
    c.close();
    expect((value as UnreadableRecord).reason).toMatch(/max_record_bytes \(262144 bytes\)/);
    expect((value as UnreadableRecord).excerpt).toMatch(/^\{"projectID":"2","pad":"000/);
  });

  it('answers a record nested 100,000 deep as unreadable instead of overflowing the stack', async () => {
    server.on('/p/deep', json(`{"projectID":"3","x":${'['.repeat(100_000)}${']'.repeat(100_000)}}`));
    const value = await client().getOne('project', '/p/deep');
    expect((value as UnreadableRecord).reason).toBe(
      'record nested deeper than operator.max_depth (64 levels)',
    );
    server.on('/p/ok', json({ projectID: '4', x: [[[1]]] }));
    expect(await client({ maxDepth: 4 }).getOne('project', '/p/ok')).toEqual({ projectID: '4', x: [[[1]]] });
    expect(await client({ maxDepth: 3 }).getOne('project', '/p/ok')).toBeInstanceOf(UnreadableRecord);
  });

  it('sets aside one oversize, compressed list element and keeps the records around it', async () => {
    server.on(
      '/list/bomb',
      gzipBomb(`[${project(1)},{"projectID":"2","pad":"`, 64 * MiB, `"},${project(3)}]`),
    );
    const body = await client().list('projects', '/list/bomb');
    const records = await collect(body.records);
    expect(records).toHaveLength(3);
    expect(records[0]).toMatchObject({ projectID: '1' });
    expect((records[1] as UnreadableRecord).keyOf('projectID')).toBe('2');
    expect(records[2]).toMatchObject({ projectID: '3' });
  });

  it('sets aside a too-deep element of a small page read in one go (the fast path)', async () => {
    server.on(
      '/list/deep',
      json(`[${project(1)},{"projectID":"2","x":${'['.repeat(5000)}${']'.repeat(5000)}}]`),
    );
    const body = await client().list('projects', '/list/deep');
    const records = await collect(body.records);
    expect(records[0]).toMatchObject({ projectID: '1' });
    expect((records[1] as UnreadableRecord).reason).toMatch(/max_depth/);
    server.on('/list/fine', json(`[${project(1)},${project(2)}]`));
    expect(await client().list('projects', '/list/fine')).toMatchObject({ kind: 'array' });
  });

  it('stores at most max_response_bytes of a 50 MB /notify answer, marked as cut', async () => {
    server.on('/notify', streamed('{"ok":true,"echo":"', Buffer.alloc(64 * 1024, 0x61), 50 * MiB, '"}'));
    const result = await client({ maxResponseBytes: 4096 }).notify('/notify', '{"a":1}');
    expect(result.status).toBe(200);
    expect(result.body).toBe(`{"ok":true,"echo":"${'a'.repeat(4096 - 19)}${truncatedMarker(4096)}`);
    expect(server.sent.get('/notify')!).toBeLessThan(40 * MiB);
    server.on('/notify', json({ ok: true }, 202));
    expect((await client().notify('/notify', '{}')).body).toBe('{"ok":true}');
  });
});

describe('lease and idle timeout against the request timeout', () => {
  const load = (overrides: Record<string, unknown>) => loadConfig({ env: {}, overrides });

  it('refuses a lease shorter than a request could take, in one line naming both keys', () => {
    let error: unknown;
    try {
      load({ 'outbox.lease_seconds': 30, 'operator.timeout_ms': 30_000 });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const message = (error as ConfigError).message;
    expect(message).not.toContain('\n');
    expect(message).toMatch(
      /^config: outbox\.lease_seconds: must be at least 61 .*operator\.timeout_ms = 30000 ms/,
    );
    // The default lease (120 s) fits the default timeout; a longer timeout needs a longer lease.
    expect(load({}).outbox.lease_seconds).toBe(120);
    expect(() => load({ 'operator.timeout_ms': 90_000 })).toThrow(
      /outbox\.lease_seconds: must be at least 181/,
    );
    expect(load({ 'operator.timeout_ms': 90_000, 'outbox.lease_seconds': 181 }).outbox.lease_seconds).toBe(
      181,
    );
  });

  it('refuses an idle timeout shorter than twice a request', () => {
    expect(() => load({ 'sync.idle_timeout_seconds': 10, 'operator.timeout_ms': 30_000 })).toThrow(
      /sync\.idle_timeout_seconds: must be at least 60 \(twice operator\.timeout_ms/,
    );
  });
});
