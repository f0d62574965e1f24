import { writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { Webhook } from 'standardwebhooks';
import { openSqliteContext, type SqliteContext } from '../../src/app/sqliteStores.js';
import type { Clock } from '../../src/common/clock.js';
import { silentLogger } from '../../src/common/log.js';
import { loadConfig } from '../../src/config/config.js';
import { configuredDeliveriesSink } from '../../src/subscribers/subscribers.js';
import { tempDir } from '../helpers/context.js';

/** Subscriber signing secrets for tests. */
export const SUB_SECRET = `whsec_${Buffer.from('subscriber-test-secret-0123456789').toString('base64')}`;
export const OTHER_SECRET = `whsec_${Buffer.from('another-subscriber-secret-98765').toString('base64')}`;

/** What a test subscriber received and how it judged it. */
export interface Received {
  id: string;
  body: string;
  /** The body as `new Webhook(secret).verify` returned it; undefined when verification failed. */
  verified: unknown;
}

/**
 * A real HTTP subscriber on loopback that verifies every request with the `standardwebhooks`
 * library. `answer` decides the status; `down()` closes the port (connection refused), `up()`
 * listens again on the same port.
 */
export class TestSubscriber {
  readonly received: Received[] = [];
  status = 200;
  /** How long the subscriber takes to answer, ms (a slow receiver; default: at once). */
  answerDelayMs = 0;
  private server: http.Server | undefined;
  port = 0;

  constructor(private readonly secret = SUB_SECRET) {}

  get url(): string {
    return `http://127.0.0.1:${this.port}/hooks/vcu`;
  }

  /** Bodies that verified, parsed. */
  get events(): Array<{ type: string; timestamp: string; data: Record<string, unknown> }> {
    return this.received.filter((r) => r.verified !== undefined).map((r) => JSON.parse(r.body));
  }

  async up(): Promise<void> {
    const server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        const headers = Object.fromEntries(
          Object.entries(req.headers).map(([k, v]) => [k, Array.isArray(v) ? v.join(',') : (v ?? '')]),
        );
        let verified: unknown;
        try {
          verified = new Webhook(this.secret).verify(body, headers);
        } catch {
          verified = undefined;
        }
        this.received.push({ id: headers['webhook-id'] ?? '', body, verified });
        const answer = () => res.writeHead(verified === undefined ? 401 : this.status).end();
        if (this.answerDelayMs > 0) setTimeout(answer, this.answerDelayMs);
        else answer();
      });
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, '127.0.0.1', () => resolve());
    });
    this.port = (server.address() as AddressInfo).port;
    this.server = server;
  }

  async down(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

/** A subscriber as the TOML file spells it. */
export interface SubscriberToml {
  name?: string;
  url: string;
  secret: string;
  events?: string[];
}

/** TOML text of `[[subscribers]]` tables (and any extra text). */
export function subscribersToml(subs: readonly SubscriberToml[], extra = ''): string {
  const tables = subs.map((s) =>
    [
      '[[subscribers]]',
      ...(s.name ? [`name = "${s.name}"`] : []),
      `url = "${s.url}"`,
      `secret = "${s.secret}"`,
      ...(s.events ? [`events = [${s.events.map((e) => `"${e}"`).join(', ')}]`] : []),
    ].join('\n'),
  );
  return `${extra}\n${tables.join('\n\n')}\n`;
}

/** A real context over a real SQLite file, configured from a TOML file holding the subscribers. */
export function subscriberContext(
  subs: readonly SubscriberToml[],
  options: { overrides?: Record<string, unknown>; clock?: Clock; extraToml?: string } = {},
): SqliteContext & { dir: string; configFile: string; dbFile: string; dispose: () => void } {
  const { dir, cleanup } = tempDir('vcu-sync-subs-');
  const configFile = path.join(dir, 'vcu-sync.toml');
  const dbFile = path.join(dir, 'test.db');
  writeFileSync(configFile, subscribersToml(subs, options.extraToml));
  const config = loadConfig({
    file: configFile,
    env: { VCU_SYNC_DB: dbFile },
    overrides: options.overrides ?? {},
  });
  const ctx = openSqliteContext(config, silentLogger, {
    clock: options.clock,
    // As the daemon and the CLI wire it: every state change writes the subscribers' deliveries.
    onStateChange: configuredDeliveriesSink(config),
  });
  return Object.assign(ctx, {
    dir,
    configFile,
    dbFile,
    dispose: () => {
      ctx.database.close();
      cleanup();
    },
  });
}

/** Polls a condition (bounded by real time only as a safety net), instead of sleeping for time to pass. */
export async function until(condition: () => boolean, what: string, step?: () => void): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    step?.();
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** Every delivery row, oldest first. */
export function deliveryRows(ctx: Pick<SqliteContext, 'database'>): Array<Record<string, unknown>> {
  return ctx.database.sqlite.prepare('SELECT * FROM deliveries ORDER BY id').all() as Array<
    Record<string, unknown>
  >;
}
