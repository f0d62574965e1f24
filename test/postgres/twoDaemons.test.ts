import { readdirSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_WEBHOOK_SECRET, type Simulator, startSimulator } from '../../src/simulator/index.js';
import { tempDir } from '../helpers/context.js';
import { useTestPgDatabase } from '../helpers/pgDatabase.js';
import { decisionPayload, signed } from '../inbox/helpers.js';
import {
  type CliChild,
  daemonEnv,
  daemonToml,
  spawnCli,
  until,
  untilEvent,
  writeToml,
} from '../ops/child.js';
import { assertNoPersonalData, transfer } from '../outbox/fixtures.js';

/**
 * The end-to-end case: two `vcu-sync run` processes on one PostgreSQL database, 2,000
 * operations queued through both APIs, one replica SIGKILLed while it holds claims. The survivor
 * must hand the dead one's claims back through its liveness sweep (their leases are 10 minutes, so
 * nothing else could free them during the test), deliver everything in order per unit, apply a
 * decision it receives to a row the dead one queued, keep the schedules running without two runs of
 * one resource overlapping, and a feed reader tailing /v1/changes on it must see every change.
 */

const TOTAL = 2_000;
const UNITS = 10;
const TOKEN = 'ops-test-token-0123456789';
const NOTIFY = '/integration/v1/notify';

const pgdb = useTestPgDatabase();
let sim: Simulator;
let dir: string;
let cleanup: () => void;

beforeAll(async () => {
  sim = await startSimulator({ webhook: { policy: 'none' }, projects: 30, issuances: 30, units: 300 });
  ({ dir, cleanup } = tempDir('vcu-sync-replicas-'));
});
afterAll(async () => {
  await sim.close();
  cleanup();
});

/** A replica as the test drives it: its process, its API and webhook URLs, its lease owner. */
interface Replica {
  cli: CliChild;
  api: string;
  webhook: string;
  owner: string;
}

function eventField(cli: CliChild, event: string, field: string): string {
  const found = cli.events().find((e) => e.event === event);
  if (!found) throw new Error(`no ${event} in:\n${cli.output().slice(-2000)}`);
  return String(found[field]);
}

async function startReplica(env: NodeJS.ProcessEnv): Promise<Replica> {
  const cli = spawnCli(['run'], env);
  await untilEvent(cli, 'daemon.ready', 60_000);
  return {
    cli,
    api: `http://${eventField(cli, 'api.listening', 'listen')}`,
    webhook: `http://${eventField(cli, 'webhook.listening', 'listen')}/webhooks/operator`,
    owner: eventField(cli, 'db.opened', 'owner'),
  };
}

const authorized = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' };

async function enqueue(api: string, op: Record<string, unknown>): Promise<number> {
  const res = await fetch(`${api}/v1/operations`, {
    method: 'POST',
    headers: authorized,
    body: JSON.stringify(op),
  });
  await res.arrayBuffer();
  return res.status;
}

/** Runs `work` over `items`, `width` at a time. */
async function inParallel<T>(
  items: readonly T[],
  width: number,
  work: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < items.length) await work(items[next++]!);
    }),
  );
}

/** Tails /v1/changes with long-polls until stopped, then until it has read up to the head. */
function tailFeed(api: string): { seen: number[]; stop(): Promise<void> } {
  const seen: number[] = [];
  let stopping = false;
  const loop = (async () => {
    let after = 0;
    for (;;) {
      const res = await fetch(`${api}/v1/changes?after=${after}&limit=1000&wait=1`, { headers: authorized });
      if (res.status !== 200) throw new Error(`/v1/changes answered ${res.status}: ${await res.text()}`);
      const page = (await res.json()) as { items: Array<{ seq: number }>; last: number; head: number };
      for (const item of page.items) seen.push(item.seq);
      after = page.last;
      if (stopping && page.items.length === 0 && after >= page.head) return;
    }
  })();
  return {
    seen,
    async stop() {
      stopping = true;
      await loop;
    },
  };
}

describe('two daemons on one PostgreSQL', () => {
  it(`${TOTAL} operations through both APIs, one replica SIGKILLed holding claims: all delivered in order per unit, decisions and schedules go on at the survivor`, async () => {
    const pool = pgdb.db.pool;
    const count = async (where: string, params: unknown[] = []) =>
      Number((await pool.query(`SELECT count(*) AS n FROM outbox WHERE ${where}`, params)).rows[0].n);
    // Leases of 10 minutes: only the survivor's liveness sweep can free the dead one's claims in time.
    // Projects every 2 s on both replicas: their runs must take turns, and go on at the survivor.
    const toml = writeToml(
      dir,
      daemonToml({ onStartup: true, extra: 'lease_seconds = 600' }).replace(
        'projects = "off"',
        'projects = "*/2 * * * * *"',
      ),
    );
    const env = daemonEnv(dir, sim.url, toml, { VCU_SYNC_DATABASE_URL: pgdb.database.url });
    const a = await startReplica(env);
    const b = await startReplica(env);
    const reader = tailFeed(b.api);

    const refs = Array.from({ length: TOTAL }, (_, i) => `rep-${String(i).padStart(4, '0')}`);
    const via = (i: number) => (i % 2 === 0 ? a : b);
    const statuses: number[] = [];
    await inParallel([...refs.keys()], 16, async (i) => {
      statuses.push(await enqueue(via(i).api, transfer(refs[i]!, { unitId: 61_000 + (i % UNITS) })));
    });
    expect(statuses.filter((s) => s !== 201)).toEqual([]);

    // Mid-drain, the next /notify requests hang for a while: A is sure to hold claims when killed.
    await until('a quarter delivered', async () => (await count("state = 'accepted'")) >= TOTAL / 4, 120_000);
    sim.faults.next(8, 'latency', { latencyMs: 4_000, pathPrefix: NOTIFY });
    await until(
      'A holding claims on a hung operator',
      async () => sim.faults.pending().length === 0 && (await count('lease_owner = $1', [a.owner])) > 0,
    );
    // A's claims, read before the kill: after it, B's 2 s sweep may hand them back before any read.
    const heldByA = (
      await pool.query<{ ref: string; lease_until: Date }>(
        `SELECT "marketplaceTransactionRef" AS ref, lease_until FROM outbox WHERE lease_owner = $1`,
        [a.owner],
      )
    ).rows;
    expect(heldByA.length).toBeGreaterThan(0);
    a.cli.child.kill('SIGKILL');
    expect(await a.cli.exited).toBeNull();
    const killedAt = Date.now();

    await until(
      () => `all ${TOTAL} accepted; survivor:\n${b.cli.output().slice(-3000)}`,
      async () => {
        if (b.cli.child.exitCode !== null)
          throw new Error(`survivor exited:\n${b.cli.output().slice(-3000)}`);
        return (await count("state = 'accepted'")) === TOTAL;
      },
      120_000,
    );
    // Nothing lost, nothing stuck: every row accepted, none still claimed; A's were sent again by B
    // long before their leases ended.
    expect(await count('lease_owner IS NOT NULL')).toBe(0);
    const accepted = await pool.query<{ ref: string; accepted_at: Date; unit: string; id: number }>(
      `SELECT "marketplaceTransactionRef" AS ref, accepted_at, id, order_key AS unit FROM outbox ORDER BY id`,
    );
    const acceptedAt = new Map(accepted.rows.map((r) => [r.ref, r.accepted_at.getTime()]));
    for (const held of heldByA)
      expect(acceptedAt.get(held.ref)!).toBeLessThan(held.lease_until.getTime() - 500_000);
    const received = new Set(sim.notifications.map((n) => n.ref));
    expect(refs.filter((ref) => !received.has(ref))).toEqual([]);

    // Per unit, accepted in queue order (a row never overtook an older one of its unit).
    const byUnit = new Map<string, number[]>();
    for (const row of accepted.rows)
      byUnit.set(row.unit, [...(byUnit.get(row.unit) ?? []), row.accepted_at.getTime()]);
    expect(byUnit.size).toBe(UNITS);
    for (const times of byUnit.values()) expect(times).toEqual([...times].sort((x, y) => x - y));

    // The survivor applies decisions to rows the dead replica queued, and knows a replay.
    const decided = refs.filter((_, i) => i % 2 === 0).slice(0, 20);
    for (const ref of decided) {
      const { headers, body } = signed(decisionPayload(ref, 'approved'), {
        id: `msg_${ref}`,
        atMs: Date.now(),
        secret: DEFAULT_WEBHOOK_SECRET,
      });
      for (let send = 0; send < 2; send++) {
        const res = await fetch(b.webhook, { method: 'POST', headers, body });
        expect(res.status, await res.text()).toBeLessThan(300);
      }
    }
    expect(await count(`state = 'approved' AND "marketplaceTransactionRef" = ANY($1)`, [decided])).toBe(
      decided.length,
    );
    const events = await pool.query(
      'SELECT count(*)::int AS n FROM webhook_events WHERE webhook_id = ANY($1)',
      [decided.map((ref) => `msg_${ref}`)],
    );
    expect(events.rows[0].n).toBe(decided.length);

    // The schedule goes on at the survivor, and no two runs of a resource ever overlapped.
    await until(
      'a projects run after the kill',
      async () =>
        Boolean(
          (
            await pool.query(
              `SELECT 1 FROM sync_runs WHERE resource = 'projects' AND status = 'succeeded' AND started_at > $1`,
              [new Date(killedAt + 1_000)],
            )
          ).rowCount,
        ),
      60_000,
    );
    const runs = await pool.query<{ resource: string; started_at: Date; finished_at: Date | null }>(
      `SELECT resource, started_at, finished_at FROM sync_runs WHERE status <> 'interrupted' ORDER BY resource, started_at`,
    );
    expect(runs.rows.filter((r) => r.resource === 'projects').length).toBeGreaterThan(2);
    for (let i = 1; i < runs.rows.length; i++) {
      const [before, after] = [runs.rows[i - 1]!, runs.rows[i]!];
      if (before.resource !== after.resource) continue;
      expect(before.finished_at, `${before.resource} run still open before the next`).not.toBeNull();
      expect(before.finished_at!.getTime()).toBeLessThanOrEqual(after.started_at.getTime());
    }

    // The reader that tailed the survivor's feed saw every change, once, in order.
    await reader.stop();
    const table = (await pool.query<{ seq: string }>('SELECT seq FROM changes ORDER BY seq')).rows.map((r) =>
      Number(r.seq),
    );
    expect(reader.seen).toEqual(table);

    // Status on the survivor: it alone, alive; the dead one's row went with its claims. A sweep
    // drops the dead replica's row, then marks its sync runs interrupted: a read between the two
    // rightly shows a run whose replica is gone, so the end state is waited for, not one read.
    type Status = {
      snapshot: { replicas?: Array<{ owner: string; alive: boolean }> };
      problems: Array<{ code: string }>;
    };
    let status: Status | undefined;
    await until(
      () => `the survivor to report no dead replica: ${JSON.stringify(status?.problems)}`,
      async () => {
        status = (await (await fetch(`${b.api}/status`, { headers: authorized })).json()) as Status;
        return !status.problems.some((p) => p.code === 'replica-dead');
      },
      30_000,
    );
    expect(status?.snapshot.replicas?.map((r) => [r.owner, r.alive])).toEqual([[b.owner, true]]);

    b.cli.child.kill('SIGTERM');
    expect(await b.cli.exited, b.cli.output().slice(-3000)).toBe(0);
    assertNoPersonalData([a.cli.output(), b.cli.output()]);
    // Neither replica opened or created a SQLite file at database.path.
    expect(readdirSync(dir).filter((f) => f.startsWith('vcu.db'))).toEqual([]);
  }, 300_000);
});
