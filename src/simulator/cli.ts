/**
 * Command line of `vcu-sync simulator`: flag parsing (every bad value names its flag) and a
 * runner that prints the URL on one line and closes cleanly on SIGINT/SIGTERM.
 */

import { onStopSignals } from '../process/stopSignals.js';
import { type Simulator, type SimulatorOptions, startSimulator } from './server.js';
import type { WebhookPolicy } from './webhooks.js';

type Setter = (o: SimulatorOptions, value: string, flag: string) => void;

function int(flag: string, value: string, min: number, max = Number.MAX_SAFE_INTEGER): number {
  if (!/^\d+$/.test(value) || Number(value) < min || Number(value) > max) {
    throw new Error(`${flag}: expected an integer from ${min} to ${max}, got "${value}"`);
  }
  return Number(value);
}

function rate(flag: string, value: string): number {
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n) || n < 0 || n > 1) {
    throw new Error(`${flag}: expected a rate from 0 to 1, got "${value}"`);
  }
  return n;
}

function oneOf<T extends string>(flag: string, value: string, allowed: readonly T[]): T {
  const found = allowed.find((a) => a === value);
  if (found === undefined) throw new Error(`${flag}: expected one of ${allowed.join(', ')}, got "${value}"`);
  return found;
}

const POLICIES: readonly WebhookPolicy[] = ['approve', 'reject', 'none', 'alternate'];

const VALUE_FLAGS: Record<string, Setter> = {
  '--port': (o, v, f) => {
    o.port = int(f, v, 0, 65535);
  },
  '--host': (o, v, f) => {
    if (v.trim() === '') throw new Error(`${f}: expected a host name or address`);
    o.host = v;
  },
  '--seed': (o, v, f) => {
    o.seed = int(f, v, 0, 0xffffffff);
  },
  '--projects': (o, v, f) => {
    o.projects = int(f, v, 0);
  },
  '--issuances': (o, v, f) => {
    o.issuances = int(f, v, 0);
  },
  '--units': (o, v, f) => {
    o.units = int(f, v, 0);
  },
  '--max-page-size': (o, v, f) => {
    o.maxPageSize = int(f, v, 1);
  },
  '--auth': (o, v, f) => {
    o.auth = oneOf(f, v, ['apikey', 'bearer', 'either'] as const);
  },
  '--api-key': (o, v, f) => {
    if (v === '') throw new Error(`${f}: must not be empty`);
    o.apiKey = v;
  },
  '--webhook-url': (o, v, f) => {
    if (!URL.canParse(v)) throw new Error(`${f}: expected a URL, got "${v}"`);
    o.webhook = { ...o.webhook, url: v };
  },
  '--webhook-secret': (o, v, f) => {
    if (!v.startsWith('whsec_')) throw new Error(`${f}: expected a secret starting with whsec_`);
    o.webhook = { ...o.webhook, secret: v };
  },
  '--policy': (o, v, f) => {
    o.webhook = { ...o.webhook, policy: oneOf(f, v, POLICIES) };
  },
  '--notify-status': (o, v, f) => {
    o.notifyStatus = Number(oneOf(f, v, ['200', '202'] as const)) as 200 | 202;
  },
  '--error-rate': (o, v, f) => {
    o.faults = { ...o.faults, error: rate(f, v) };
  },
  '--fault-429-rate': (o, v, f) => {
    o.faults = { ...o.faults, rateLimit: rate(f, v) };
  },
  '--rate-limit': (o, v, f) => {
    o.rateLimit = { perSecond: int(f, v, 1) };
  },
  '--latency-ms': (o, v, f) => {
    o.faults = { ...o.faults, latencyMs: int(f, v, 0) };
  },
};

const BOOLEAN_FLAGS: Record<string, (o: SimulatorOptions) => void> = {
  '--units-unpaginated': (o) => {
    o.unitsUnpaginated = true;
  },
  '--projects-unpaginated': (o) => {
    o.projectsUnpaginated = true;
  },
  '--echo-personal': (o) => {
    o.webhook = { ...o.webhook, echoPersonal: true };
  },
};

/** Parses `--flag value` and `--flag=value`. Throws an Error naming the flag on bad input. */
export function parseSimulatorArgs(argv: string[]): SimulatorOptions {
  const opts: SimulatorOptions = {};
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    const eq = arg.indexOf('=');
    const flag = eq > 0 ? arg.slice(0, eq) : arg;
    const boolSetter = BOOLEAN_FLAGS[flag];
    if (boolSetter) {
      if (eq > 0) throw new Error(`${flag}: takes no value`);
      boolSetter(opts);
      continue;
    }
    const setter = VALUE_FLAGS[flag];
    if (!setter) throw new Error(`unknown option: ${flag}`);
    let value: string | undefined;
    if (eq > 0) value = arg.slice(eq + 1);
    else value = argv[++i];
    if (value === undefined) throw new Error(`${flag}: missing value`);
    setter(opts, value, flag);
  }
  return opts;
}

/**
 * Starts the simulator from command-line arguments and prints one line with its URL.
 * Stays up until SIGINT/SIGTERM. `out` is injectable for tests.
 */
export async function runSimulatorCli(
  argv: string[],
  out: (line: string) => void = (l) => process.stdout.write(`${l}\n`),
): Promise<Simulator> {
  const opts = parseSimulatorArgs(argv);
  const sim = await startSimulator(opts);
  // One line, no key or secret: the output may end up in a journal.
  out(`operator simulator listening on ${sim.url}`);
  const close = sim.close;
  // A repeated signal (one Ctrl-C relayed by npm and tsx) must not cut the close short.
  const unlisten = onStopSignals({ stop: () => void close().then(() => process.exit(0)) });
  // Closing by hand (tests, the demo) must not leave signal handlers behind.
  sim.close = async () => {
    unlisten();
    await close();
  };
  return sim;
}
