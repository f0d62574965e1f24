import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Simulator, startSimulator } from '../../src/simulator/index.js';
import { tempDir } from '../helpers/context.js';
import { apiCaller } from '../helpers/http.js';
import {
  type CliChild,
  daemonEnv,
  daemonToml,
  spawnCli,
  until,
  untilEvent,
  writeToml,
} from '../ops/child.js';
import { transfer } from '../outbox/fixtures.js';
import { everyCell, findAll, hostilePeople, keyNeedles, personalNeedles } from './leaks.js';

/**
 * The operator's worst day for privacy, end to end: a child `vcu-sync run` against the simulator,
 * which echoes every notification in its 2xx, quotes the personal fields in error bodies and in
 * decision webhooks (reasons and the whole body), and answers 401s quoting the API key in base64,
 * upper case and URL-encoded. Then every cell of every table, every log line, every API answer and
 * every CLI output is searched for the values and their encoded forms: none outside `outbox.body`
 * before the scrub, none anywhere after it (run N days later by backdating the rows).
 */

const KEY = 'sk_live/Priv+Key=0123456789abcdef';
const TOKEN = 'privacy-api-token-0123456789';
const REFS = [
  'privacy-ok-1',
  'reject-privacy-2',
  'privacy-fail-3',
  'privacy-retry-4',
  'privacy-auth-5',
  'reject-privacy-early-6',
] as const;
const people = REFS.map((_, i) => hostilePeople(i + 1));
const PERSONAL = personalNeedles(people);
const SECRET = keyNeedles(KEY);

let sim: Simulator;
let dir: string;
let cleanup: () => void;
let env: NodeJS.ProcessEnv;
const runs: CliChild[] = [];

function listenOf(run: CliChild, event: string): string {
  const line = run.events().find((e) => e.event === event);
  if (!line) throw new Error(`no ${event} line`);
  return String(line.listen);
}

async function startDaemon(): Promise<{ run: CliChild; call: ReturnType<typeof apiCaller> }> {
  const run = spawnCli(['run'], env);
  runs.push(run);
  await untilEvent(run, 'daemon.ready');
  sim.webhooks.configure({ url: `http://${listenOf(run, 'webhook.listening')}/webhooks/operator` });
  return { run, call: apiCaller(`http://${listenOf(run, 'api.listening')}`, TOKEN) };
}

async function stopDaemon(run: CliChild): Promise<void> {
  run.child.kill('SIGTERM');
  expect(await run.exited, run.output().slice(-2000)).toBe(0);
}

async function cli(args: string[]): Promise<string> {
  const child = spawnCli(args, env);
  await child.exited;
  return child.output();
}

const dbFile = () => path.join(dir, 'vcu.db');

function stateOf(ref: string): string | undefined {
  const db = new Database(dbFile(), { readonly: true });
  try {
    return (
      db.prepare('SELECT state FROM outbox WHERE marketplaceTransactionRef = ?').get(ref) as
        | { state: string }
        | undefined
    )?.state;
  } finally {
    db.close();
  }
}

function count(sql: string, ...params: unknown[]): number {
  const db = new Database(dbFile(), { readonly: true });
  try {
    return db
      .prepare(sql)
      .pluck()
      .get(...params) as number;
  } finally {
    db.close();
  }
}

/** The needles found in the database file and its WAL, read as bytes. */
function bytesFound(needles: readonly string[]): string[] {
  const files = [dbFile(), `${dbFile()}-wal`].filter((f) => existsSync(f)).map((f) => readFileSync(f));
  return needles.filter((n) => files.some((bytes) => bytes.includes(Buffer.from(n, 'utf8'))));
}

function notification(i: number): Record<string, unknown> {
  return { ...transfer(REFS[i]!, { unitId: 61_000 + i }), ...people[i] };
}

/** Every text a person or program can read: tables, logs, API answers, CLI outputs. */
async function everything(
  call: ReturnType<typeof apiCaller>,
): Promise<Array<{ where: string; text: string }>> {
  const texts = everyCell(dbFile());
  for (const [i, run] of runs.entries())
    texts.push({ where: `daemon log (run ${i + 1})`, text: run.output() });
  const answers = ['/v1/operations?limit=1000', '/status', '/', '/metrics', '/v1/changes?after=0'];
  for (const ref of REFS) answers.push(`/v1/operations/${encodeURIComponent(ref)}`);
  for (const p of answers) {
    const res = await call('GET', p);
    expect([200, 503], `${p}: ${res.text.slice(0, 300)}`).toContain(res.status);
    texts.push({ where: `GET ${p}`, text: res.text });
  }
  const commands = [['outbox', 'list'], ['outbox', 'list', '--json'], ['status'], ['status', '--json']];
  for (const ref of REFS) commands.push(['outbox', 'show', ref]);
  // Side by side: each is a process of its own reading the same file.
  const outputs = await Promise.all(commands.map((args) => cli(args)));
  for (const [i, args] of commands.entries())
    texts.push({ where: `vcu-sync ${args.join(' ')}`, text: outputs[i]! });
  return texts;
}

const describeFound = (found: ReturnType<typeof findAll>) =>
  found
    .slice(0, 20)
    .map((f) => `${f.where}: ${JSON.stringify(f.needle)} in …${JSON.stringify(f.excerpt)}…`)
    .join('\n');

beforeAll(async () => {
  ({ dir, cleanup } = tempDir('vcu-sync-privacy-'));
  sim = await startSimulator({
    projects: 5,
    issuances: 10,
    units: 20,
    apiKey: KEY,
    webhook: { policy: 'approve', delayMs: 5, echoPersonal: true },
  });
  const toml = daemonToml({ onStartup: false, extra: 'max_attempts = 5\nscrub_after_days = 30\n' });
  env = daemonEnv(dir, sim.url, writeToml(dir, toml), {
    VCU_SYNC_API_KEY: KEY,
    VCU_SYNC_API_TOKEN: TOKEN,
    VCU_SYNC_LOG_LEVEL: 'debug',
  });
});

afterAll(async () => {
  for (const run of runs) if (run.child.exitCode === null) run.child.kill('SIGKILL');
  await sim?.close();
  cleanup?.();
});

describe('personal data and the API key under an echoing operator', () => {
  it('are found only in outbox.body before the scrub, and nowhere after it', async () => {
    const { run, call } = await startDaemon();
    const enqueue = async (i: number) => {
      const res = await call('POST', '/v1/operations', notification(i));
      expect(res.status, res.text).toBe(201);
    };
    const settled = (ref: string, state: string) =>
      until(`${ref} ${state} (is ${stateOf(ref)})`, () => stateOf(ref) === state);

    // A 401 on a list read quoting the key: the sync run fails and keeps the operator's words.
    sim.faults.next(5, '401', { pathPrefix: '/integration/v1/projects', echoKey: true });
    expect((await call('POST', '/v1/sync/projects')).status).toBe(202);
    await until(
      'the projects run failed',
      () => count(`SELECT count(*) FROM sync_runs WHERE resource = 'projects' AND status = 'failed'`) === 1,
    );
    sim.faults.clear();

    await enqueue(0); // echoed in the 2xx and in the approval webhook
    await settled(REFS[0], 'approved');
    await enqueue(1); // rejected, the reason naming both users
    await settled(REFS[1], 'rejected');
    sim.faults.next(1, 'echo', { pathPrefix: '/integration/v1/notify', echoStatus: 422 });
    await enqueue(2); // failed with an error body quoting the request
    await settled(REFS[2], 'failed');
    sim.faults.next(1, 'echo', { pathPrefix: '/integration/v1/notify', echoStatus: 503 });
    await enqueue(3); // retried after an echoing 503, then approved
    await settled(REFS[3], 'approved');
    sim.faults.next(1, '401', { pathPrefix: '/integration/v1/notify', echoKey: true });
    await enqueue(4); // sending paused by a 401 quoting the key, then resumed by the probe
    await settled(REFS[4], 'approved');
    // A decision quoting the users that arrives before its operation was queued.
    await sim.webhooks.onAccepted(notification(5));
    await sim.webhooksIdle();
    await until(
      'the early decision stored',
      () => count('SELECT count(*) FROM webhook_events WHERE marketplaceTransactionRef = ?', REFS[5]) === 1,
    );
    await enqueue(5);
    await settled(REFS[5], 'rejected');
    await sim.webhooksIdle();
    await until('every decision webhook stored', () => count('SELECT count(*) FROM webhook_events') === 6);

    // The operator did get the real values, and did echo them: the masks had work to do.
    expect(
      sim.notifications.some((n) =>
        JSON.stringify(n.body).includes(JSON.stringify(people[0]!.originUserName)),
      ),
    ).toBe(true);
    expect(sim.faults.injected.map((f) => f.kind)).toEqual(expect.arrayContaining(['401', 'echo']));
    expect(run.events().some((e) => e.event === 'outbox.paused')).toBe(true);

    const before = await everything(call);
    const inBody = findAll(
      before.filter((t) => t.where === 'outbox.body'),
      PERSONAL,
    );
    expect(inBody.length, 'the needles find the stored bodies').toBeGreaterThan(0);
    expect(bytesFound(PERSONAL).length, 'the needles find the bodies in the files').toBeGreaterThan(0);
    const leaks = findAll(
      before.filter((t) => t.where !== 'outbox.body'),
      PERSONAL,
    );
    expect(leaks, describeFound(leaks)).toEqual([]);
    const keyLeaks = findAll(before, SECRET);
    expect(keyLeaks, describeFound(keyLeaks)).toEqual([]);

    // What was masked is still useful: the operator's words around the masks are kept.
    const text = (where: string) =>
      before
        .filter((t) => t.where === where)
        .map((t) => t.text)
        .join('\n');
    expect(text('sync_runs.error')).toMatch(/401.*\[redacted\]/);
    expect(text('outbox.last_error')).toMatch(
      /Holder \[redacted\] <\[redacted\]>.*does not match the account/,
    );
    expect(text('outbox.decision_reason')).toContain('[redacted]');
    expect(text('outbox_attempts.error')).toContain('[redacted]');
    expect(text('webhook_events.body')).toContain('"notification":{');
    expect(text('vcu-sync status')).toMatch(/projects/);

    // N days later: the scrub runs when the daemon starts again, on rows backdated past the cutoff.
    await stopDaemon(run);
    const old = new Date(Date.now() - 31 * 86_400_000).toISOString();
    const db = new Database(dbFile());
    db.prepare(
      `UPDATE outbox SET finished_at = @old, decided_at = COALESCE(decided_at, @old), updated_at = @old
       WHERE state IN ('approved', 'rejected', 'failed', 'cancelled')`,
    ).run({ old });
    db.close();
    const second = await startDaemon();
    await untilEvent(second.run, 'outbox.scrubbed');
    expect(second.run.events().find((e) => e.event === 'outbox.scrubbed')?.rows).toBe(REFS.length);

    const after = await everything(second.call);
    const left = findAll(after, PERSONAL);
    expect(left, describeFound(left)).toEqual([]);
    const keyLeft = findAll(after, SECRET);
    expect(keyLeft, describeFound(keyLeft)).toEqual([]);
    expect(count(`SELECT count(*) FROM outbox WHERE scrubbed_at IS NULL`)).toBe(0);
    // Nor any byte of them in the database file or its WAL (`strings vcu.db`), once the daemon has
    // emptied the WAL (at a moment no reader holds an older snapshot), with the daemon still running.
    let inFiles: string[] = [];
    await until(
      () => `no personal data in the database file and its WAL (found: ${inFiles.slice(0, 5).join(', ')})`,
      () => {
        inFiles = bytesFound(PERSONAL);
        return inFiles.length === 0;
      },
    );
    await stopDaemon(second.run);
  }, 300_000);
});
