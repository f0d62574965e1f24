import http from 'node:http';
import { createServer } from 'node:net';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { OperatorClient } from '../../src/operator/client.js';
import { OPERATOR_URL_HINT, OperatorError } from '../../src/operator/operatorErrors.js';
import { tempDir } from '../helpers/context.js';
import { daemonEnv, daemonToml, spawnCli, writeToml } from '../ops/child.js';

/**
 * An operator that cannot be reached (nothing listens, no such host) names `operator.url` and where
 * it is set, since that is where the fix usually is; a connection the operator itself cut does not.
 */

const { dir, cleanup } = tempDir('vcu-sync-unreachable-');
afterAll(cleanup);

/** A loopback port nothing listens on (free a moment ago). */
async function closedPort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as { port: number };
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

async function failure(baseUrl: string): Promise<OperatorError> {
  const client = new OperatorClient({
    baseUrl,
    apiKey: 'k-unreachable-1',
    ratePerSecond: 1000,
    timeoutMs: 5000,
  });
  try {
    await client.list('projects', '/integration/v1/projects');
  } catch (err) {
    expect(err).toBeInstanceOf(OperatorError);
    return err as OperatorError;
  } finally {
    client.close();
  }
  throw new Error('expected an OperatorError');
}

describe('an operator that cannot be reached', () => {
  it('a refused connection names the address and operator.url with its variable', async () => {
    const port = await closedPort();
    const err = await failure(`http://127.0.0.1:${port}`);
    expect(err.kind).toBe('transient');
    expect(err.message).toBe(
      `operator request ECONNREFUSED: connect ECONNREFUSED 127.0.0.1:${port}; ${OPERATOR_URL_HINT}`,
    );
    expect(err.message).not.toContain('k-unreachable-1');
  });

  it('a host that does not resolve names operator.url', async () => {
    // .invalid never resolves (RFC 6761): ENOTFOUND, or EAI_AGAIN with no resolver at all.
    const err = await failure('http://registry.vcu-sync.invalid');
    expect(err.message).toMatch(/^operator request (ENOTFOUND|EAI_AGAIN): .*registry\.vcu-sync\.invalid/);
    expect(err.message).toContain(`; ${OPERATOR_URL_HINT}`);
  });

  it('a connection the operator cut after accepting it does not blame operator.url', async () => {
    const server = http.createServer((req) => req.socket.destroy());
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const err = await failure(`http://127.0.0.1:${(server.address() as { port: number }).port}`);
      expect(err.kind).toBe('transient');
      expect(err.message).not.toContain('operator.url');
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('vcu-sync sync says so in its summary, exit 1', async () => {
    const port = await closedPort();
    const toml = writeToml(dir, daemonToml({ onStartup: false }));
    const child = spawnCli(['sync', 'projects'], {
      HOME: dir,
      ...daemonEnv(dir, `http://127.0.0.1:${port}`, toml, { VCU_SYNC_DB: path.join(dir, 'sync.db') }),
    });
    const code = await child.exited;
    expect(code, child.output()).toBe(1);
    expect(child.output()).toContain(`ECONNREFUSED 127.0.0.1:${port}; ${OPERATOR_URL_HINT}`);
  });
});
