import { createServer, type Server } from 'node:net';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from '../helpers/context.js';
import { spawnCli } from './child.js';

let dir: string;
let cleanup: () => void;
const held: Server[] = [];

/** Occupies the demo's preferred port when it can, so the demo has to find another. */
function hold(port: number): Promise<void> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.once('error', () => resolve());
    srv.listen(port, '127.0.0.1', () => {
      held.push(srv);
      resolve();
    });
  });
}

beforeAll(async () => {
  ({ dir, cleanup } = tempDir('vcu-sync-demo-'));
  await hold(8787);
  await hold(8788);
});
afterAll(async () => {
  for (const srv of held) await new Promise((r) => srv.close(r));
  cleanup();
});

describe('vcu-sync demo', () => {
  it('runs simulator and daemon on free ports, mirrors the lists and gets an operation approved', async () => {
    const demo = spawnCli(['demo', '--seconds', '25', '--dir', dir], {});
    const code = await demo.exited;
    const output = demo.output();
    expect(code, output.slice(-3000)).toBe(0);

    expect(output).toContain('vcu-sync demo: operator simulator and daemon running on loopback');
    const api = /status page\s+http:\/\/127\.0\.0\.1:(\d+)\//.exec(output);
    expect(api, output).not.toBeNull();
    // 8787 was taken (by this test, or by something else): the demo picked another port.
    expect(Number(api![1])).not.toBe(8787);
    expect(output).toMatch(/^mirror: \d+ projects, \d+ issuances, \d+ unit operations \| outbox: /m);
    expect(output).toContain(`demo stopped; the database stays in ${path.join(dir, 'vcu-sync.db')}`);
    // The query it suggests opens the database read-only, so a shell left open never blocks the daemon.
    expect(output).toMatch(
      /^ {2}try {11}sqlite3 -readonly \S+vcu-sync\.db "SELECT state, count\(\*\) FROM outbox GROUP BY state"$/m,
    );
    expect(output).not.toMatch(/enqueue (answered|failed)/);

    const db = new Database(path.join(dir, 'vcu-sync.db'), { readonly: true });
    try {
      const n = (sql: string) => (db.prepare(sql).get() as { n: number }).n;
      expect(n('SELECT count(*) AS n FROM projects')).toBe(120);
      expect(n('SELECT count(*) AS n FROM issuances')).toBe(600);
      expect(n('SELECT count(*) AS n FROM unit_operations')).toBe(20_000);
      expect(n("SELECT count(*) AS n FROM sync_runs WHERE status = 'succeeded'")).toBeGreaterThanOrEqual(4);
      expect(n("SELECT count(*) AS n FROM outbox WHERE state = 'approved'")).toBeGreaterThanOrEqual(1);
      expect(n("SELECT count(*) AS n FROM outbox WHERE state = 'sending'")).toBe(0);
      expect(n('SELECT count(*) AS n FROM webhook_events')).toBeGreaterThanOrEqual(1);
      // The demo ends settled: every operation it queued was sent and its decision stored.
      expect(n("SELECT count(*) AS n FROM outbox WHERE state NOT IN ('approved', 'rejected')")).toBe(0);
      // Halfway, the simulator's projects changed shape: both changes recorded once.
      expect(output).toContain("the simulator changed the projects' shape");
      expect(
        db
          .prepare("SELECT field, kind, after FROM schema_changes WHERE resource = 'projects' ORDER BY id")
          .all(),
      ).toEqual([
        { field: 'projectRating', kind: 'field-added', after: 'string' },
        { field: 'projectStatus', kind: 'new-value', after: 'Suspended' },
      ]);
    } finally {
      db.close();
    }
  });

  it('run again in the same folder, records every decision of the second run', async () => {
    const file = path.join(dir, 'vcu-sync.db');
    const before = new Database(file, { readonly: true });
    const mark = before
      .prepare(
        'SELECT (SELECT max(id) FROM outbox) AS outbox, (SELECT max(id) FROM webhook_events) AS events',
      )
      .get() as { outbox: number; events: number };
    before.close();

    const demo = spawnCli(['demo', '--seconds', '8', '--dir', dir], {});
    const code = await demo.exited;
    expect(code, demo.output().slice(-3000)).toBe(0);

    const db = new Database(file, { readonly: true });
    try {
      const rows = db
        .prepare('SELECT marketplaceTransactionRef AS ref, state FROM outbox WHERE id > ? ORDER BY id')
        .all(mark.outbox) as Array<{ ref: string; state: string }>;
      expect(rows.length).toBeGreaterThanOrEqual(2);
      // Every operation of the second run was decided; none waits for a decision dropped as a replay.
      const undecided = rows.filter((r) => r.state !== 'approved' && r.state !== 'rejected');
      const eventsOf = db.prepare(
        'SELECT webhook_id, outcome, received_at FROM webhook_events WHERE marketplaceTransactionRef = ?',
      );
      expect(
        undecided,
        `undecided, with their webhook events: ${JSON.stringify(undecided.map((r) => ({ ...r, events: eventsOf.all(r.ref) })))}\ndemo output:\n${demo.output().slice(-3000)}`,
      ).toEqual([]);
      const events = db
        .prepare(
          'SELECT webhook_id, marketplaceTransactionRef AS ref, outcome, id_reused FROM webhook_events WHERE id > ? ORDER BY id',
        )
        .all(mark.events) as Array<{ webhook_id: string; ref: string; outcome: string; id_reused: number }>;
      expect(events.map((e) => e.ref).sort()).toEqual(rows.map((r) => r.ref).sort());
      expect(events.every((e) => e.outcome === 'applied' && e.id_reused === 0)).toBe(true);
      // The simulator's webhook ids are unique across runs.
      const reused = db
        .prepare(
          'SELECT count(*) AS n FROM (SELECT webhook_id FROM webhook_events GROUP BY webhook_id HAVING count(*) > 1)',
        )
        .get() as { n: number };
      expect(reused.n).toBe(0);
    } finally {
      db.close();
    }
  });
});
