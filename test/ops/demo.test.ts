import { createServer, type Server } from 'node:net';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from '../helpers/context.js';
import { spawnCli } from './child.js';

let dir: string;
let cleanup: () => void;
const held: Server[] = [];

/** What the demo says it injected: the issuances and the lost retirement's ref each finding must name. */
interface Injected {
  lostRef: string;
  beyond: string;
  doubled: string;
  dropped: string;
}

/** The four `injected:` lines of a demo's output, read back; a missing one fails with the output. */
function injectedIn(output: string): Injected {
  const match = (re: RegExp) => {
    const m = re.exec(output);
    expect(m, `${re}\n${output.slice(-4000)}`).not.toBeNull();
    return m![1] as string;
  };
  return {
    lostRef: match(/^injected: a lost retirement: Retire (\S+) of 4\.25 t on issuance \d+ approved/m),
    beyond: match(/^injected: a retire beyond what was tokenized: Retire \S+ of 15 t on issuance (\d+)/m),
    doubled: match(
      /^injected: a double tokenization: Tokenization of \d+ t reported twice \(\S+, \S+\) on issuance (\d+)/m,
    ),
    dropped: match(
      /^injected: custody dropped: the operator ended custody of issuance (\d+) \(read by a custody sync\)/m,
    ),
  };
}

interface OpenFinding {
  kind: string;
  severity: string;
  subject: string;
  subject_id: string;
}

const openFindings = (db: Database.Database) =>
  db
    .prepare(
      'SELECT kind, severity, subject, subject_id FROM reconciliation_findings WHERE resolved_at IS NULL ORDER BY kind, subject_id',
    )
    .all() as OpenFinding[];

/** Set by the first run, checked again after the second. */
let first: Injected | undefined;

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
      // The simulator's books log each approved Retire and Detokenization (all but the one lost),
      // and the demo syncs the units log before its last pass.
      const appended = n(
        "SELECT count(*) AS n FROM outbox WHERE state = 'approved' AND lower(\"operationType\") IN ('retire', 'detokenization')",
      );
      expect(appended).toBeGreaterThanOrEqual(3);
      expect(n('SELECT count(*) AS n FROM unit_operations')).toBe(20_000 + appended - 1);
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

      // Reconciliation: the consistent stream raised nothing (no decision overdue, no deposit left
      // untokenized, no retirement of its unmatched); each injected inconsistency raised exactly
      // the finding that names it.
      const injected = injectedIn(output);
      first = injected;
      expect(openFindings(db)).toEqual([
        { kind: 'not-in-custody', severity: 'warning', subject: 'issuance', subject_id: injected.dropped },
        {
          kind: 'outstanding-negative',
          severity: 'critical',
          subject: 'issuance',
          subject_id: injected.beyond,
        },
        { kind: 'over-issuance', severity: 'critical', subject: 'issuance', subject_id: injected.doubled },
        {
          kind: 'retirement-missing',
          severity: 'warning',
          subject: 'operation',
          subject_id: injected.lostRef,
        },
      ]);
      // The injected operations were all approved: the findings are about approved books, not refusals.
      const stateOf = db.prepare('SELECT state FROM outbox WHERE "marketplaceTransactionRef" = ?');
      expect(stateOf.get(injected.lostRef)).toEqual({ state: 'approved' });
      // The demo printed them, gravest first, and where to see them again.
      expect(output).toContain('reconciliation: 4 open findings (2 critical, 2 warning)');
      const printed = output.split('\n').filter((l) => /^ {2}(critical|warning|info) /.test(l));
      expect(printed.map((l) => l.trim().split(/\s+/).slice(0, 3).join(' '))).toEqual([
        `critical outstanding-negative issuance`,
        `critical over-issuance issuance`,
        `warning not-in-custody issuance`,
        `warning retirement-missing operation`,
      ]);
      expect(printed[0]).toContain(`issuance ${injected.beyond}: retired 15 t`);
      expect(printed[3]).toContain(`operation ${injected.lostRef}:`);
      expect(output).toMatch(/^ {2}see them again: VCU_SYNC_DB=\S+vcu-sync\.db npx vcu-sync reconcile$/m);
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
        .all(mark.events) as Array<{
        webhook_id: string;
        ref: string | null;
        outcome: string;
        id_reused: number;
      }>;
      // One decision per operation, besides the deposits (no ref) of the demo's records at its start.
      const decisions = events.filter((e) => e.ref !== null);
      expect(decisions.map((e) => e.ref).sort()).toEqual(rows.map((r) => r.ref).sort());
      expect(events.length - decisions.length).toBe(8);
      expect(events.every((e) => e.outcome === 'applied' && e.id_reused === 0)).toBe(true);
      // The simulator's webhook ids are unique across runs.
      const reused = db
        .prepare(
          'SELECT count(*) AS n FROM (SELECT webhook_id FROM webhook_events GROUP BY webhook_id HAVING count(*) > 1)',
        )
        .get() as { n: number };
      expect(reused.n).toBe(0);

      // A new simulator rebuilt its books from the first run's approvals: the first run's consistent
      // operations stay consistent. Open are only findings on what was injected (the three issuances,
      // the lost retirements), whichever of this run's injections got in before its stop: the
      // over-issuance only grows and the first run's lost retirement stays lost.
      expect(demo.output()).toMatch(
        /^The simulator's books were rebuilt from the \d+ operations it approved in earlier runs\.$/m,
      );
      const injected = first!;
      const allowed = new Set([
        `not-in-custody ${injected.dropped}`,
        `outstanding-negative ${injected.beyond}`,
        `over-issuance ${injected.doubled}`,
      ]);
      const open = openFindings(db);
      expect(
        open.filter((f) =>
          f.kind === 'retirement-missing'
            ? !f.subject_id.startsWith('demo-lost-')
            : !allowed.has(`${f.kind} ${f.subject_id}`),
        ),
      ).toEqual([]);
      expect(open.map((f) => `${f.kind} ${f.subject_id}`)).toEqual(
        expect.arrayContaining([
          `over-issuance ${injected.doubled}`,
          `retirement-missing ${injected.lostRef}`,
        ]),
      );
    } finally {
      db.close();
    }
  });
});
