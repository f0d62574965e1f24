import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runSync } from '../../src/mirror/syncRun.js';
import { OperatorClient } from '../../src/operator/client.js';
import { OperatorError } from '../../src/operator/operatorErrors.js';
import { type Simulator, startSimulator } from '../../src/simulator/index.js';
import { sqliteBackend } from '../../src/sqlite/mirror.js';
import { testContext } from '../helpers/context.js';
import { getHealth } from '../helpers/health.js';

/**
 * A request that went out without an API key, and was refused for it, says so: the operator did
 * not "refuse the API key" when none was sent.
 */

let sim: Simulator;
beforeAll(async () => {
  sim = await startSimulator({ projects: 5, issuances: 5, units: 5 });
});
afterAll(async () => {
  await sim.close();
});

const noSleep = async () => {};

async function syncProjects(overrides: Record<string, unknown>) {
  const ctx = testContext({
    overrides: { 'operator.url': sim.url, 'operator.rate_per_second': 100_000, ...overrides },
  });
  try {
    const outcome = await runSync(ctx, 'projects', {
      backend: sqliteBackend(ctx.database.sqlite),
      trigger: 'manual',
      sleep: noSleep,
    });
    const health = getHealth(ctx.database.sqlite, ctx.config, ctx.clock.now());
    return { outcome, problem: health.problems.find((p) => p.code === 'operator-auth') };
  } finally {
    ctx.operator().close();
    ctx.dispose();
  }
}

async function notifyFailure(client: OperatorClient): Promise<OperatorError> {
  try {
    await client.notify('/integration/v1/notify', '{}');
  } catch (err) {
    expect(err).toBeInstanceOf(OperatorError);
    return err as OperatorError;
  } finally {
    client.close();
  }
  throw new Error('expected the operator to refuse');
}

describe('a request sent without an API key', () => {
  it('a sync with no key configured fails saying no key was configured, and status repeats it', async () => {
    const { outcome, problem } = await syncProjects({});
    expect(outcome.status).toBe('failed');
    expect(outcome.error).toBe(
      'projects: the operator wants an API key: operator answered 401 to a request sent without an API key (no API key was configured): No API key found in request',
    );
    expect(outcome.error).not.toMatch(/refused the API key/);
    expect(problem?.severity).toBe('critical');
    expect(problem?.message).toContain('no API key was configured');
  });

  it('a sync with a wrong key still says the operator refused the key', async () => {
    const { outcome, problem } = await syncProjects({ 'operator.api_key': 'not-the-key' });
    expect(outcome.status).toBe('failed');
    expect(outcome.error).toMatch(/^projects: the operator refused the API key: operator answered 403/);
    expect(outcome.error).not.toMatch(/without an API key/);
    expect(problem?.severity).toBe('critical');
    expect(problem?.message).not.toContain('not-the-key');
  });

  it('/notify without the key by configuration (auth_on_notify = false) names that setting on 401', async () => {
    sim.faults.next(1, '401', { pathPrefix: '/integration/v1/notify' });
    const err = await notifyFailure(
      new OperatorClient({ baseUrl: sim.url, apiKey: 'sim-api-key', authOnNotify: false }),
    );
    expect(err.kind).toBe('auth');
    expect(err.keyNotSent).toBe('operator.auth_on_notify = false');
    expect(err.message).toMatch(
      /^operator answered 401 to a request sent without an API key \(operator\.auth_on_notify = false\)/,
    );
  });

  it('/notify with the key sent and refused does not claim it went without one', async () => {
    sim.faults.next(1, '401', { pathPrefix: '/integration/v1/notify' });
    const err = await notifyFailure(new OperatorClient({ baseUrl: sim.url, apiKey: 'sim-api-key' }));
    expect(err.kind).toBe('auth');
    expect(err.keyNotSent).toBeUndefined();
    expect(err.message).toMatch(/^operator answered 401: /);
  });
});
