import { describe, expect, it } from 'vitest';
import { parseSimulatorArgs, runSimulatorCli } from '../../src/simulator/index.js';

describe('parseSimulatorArgs', () => {
  it('parses every flag, in both --flag value and --flag=value forms', () => {
    expect(
      parseSimulatorArgs([
        '--port',
        '8123',
        '--host=0.0.0.0',
        '--seed',
        '9',
        '--projects',
        '5',
        '--issuances=6',
        '--units',
        '1000000',
        '--max-page-size',
        '500',
        '--units-unpaginated',
        '--auth',
        'bearer',
        '--api-key',
        'k',
        '--webhook-url',
        'http://127.0.0.1:8788/webhooks/operator',
        '--webhook-secret',
        'whsec_c2VjcmV0',
        '--policy',
        'alternate',
        '--notify-status',
        '200',
        '--error-rate',
        '0.1',
        '--fault-429-rate=0.05',
        '--latency-ms',
        '20',
        '--rate-limit',
        '25',
      ]),
    ).toEqual({
      port: 8123,
      host: '0.0.0.0',
      seed: 9,
      projects: 5,
      issuances: 6,
      units: 1_000_000,
      maxPageSize: 500,
      unitsUnpaginated: true,
      auth: 'bearer',
      apiKey: 'k',
      webhook: {
        url: 'http://127.0.0.1:8788/webhooks/operator',
        secret: 'whsec_c2VjcmV0',
        policy: 'alternate',
      },
      notifyStatus: 200,
      faults: { error: 0.1, rateLimit: 0.05, latencyMs: 20 },
      rateLimit: { perSecond: 25 },
    });
  });

  it('names the flag in the error for a bad value, a missing value or an unknown flag', () => {
    const cases: [string[], RegExp][] = [
      [['--port', 'eighty'], /^--port: /],
      [['--port', '70000'], /^--port: /],
      [['--units', '-1'], /^--units: /],
      [['--auth', 'token'], /^--auth: .*apikey, bearer, either/],
      [['--error-rate', '1.5'], /^--error-rate: /],
      [['--fault-429-rate', ''], /^--fault-429-rate: /],
      [['--notify-status', '201'], /^--notify-status: /],
      [['--policy', 'maybe'], /^--policy: /],
      [['--webhook-url', 'not a url'], /^--webhook-url: /],
      [['--webhook-secret', 'abc'], /^--webhook-secret: /],
      [['--seed'], /^--seed: missing value/],
      [['--units-unpaginated=yes'], /^--units-unpaginated: /],
      [['--frobnicate'], /unknown option: --frobnicate/],
    ];
    for (const [argv, re] of cases) expect(() => parseSimulatorArgs(argv), argv.join(' ')).toThrow(re);
  });
});

describe('runSimulatorCli', () => {
  it('starts a simulator and prints one line with its URL', async () => {
    const lines: string[] = [];
    const sim = await runSimulatorCli(['--port', '0', '--projects', '2'], (l) => lines.push(l));
    try {
      expect(lines).toHaveLength(1);
      expect(lines[0]).toContain(sim.url);
      const res = await fetch(`${sim.url}/integration/v1/projects`, { headers: { apikey: 'sim-api-key' } });
      expect(((await res.json()) as unknown[]).length).toBe(2);
    } finally {
      await sim.close();
    }
  });
});
