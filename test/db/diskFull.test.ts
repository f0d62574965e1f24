import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { databaseFaultsFor } from '../../src/sqlite/faults.js';
import { startApi } from '../api/apiHarness.js';
import { PERSONAL, transfer } from '../outbox/fixtures.js';

let api: Awaited<ReturnType<typeof startApi>>;

beforeAll(async () => {
  api = await startApi();
});
afterAll(async () => {
  await api.close();
});

const storedRefs = () =>
  new Set(
    api.ctx.database.sqlite.prepare('SELECT marketplaceTransactionRef FROM outbox').pluck().all() as string[],
  );

/** /readyz's status and its database reasons (this harness runs no webhook listener). */
async function databaseReadiness(): Promise<{ status: number; reasons: string[] }> {
  const res = await fetch(`${api.base}/readyz`);
  const body = (await res.json()) as { reasons: string[] };
  const reasons = body.reasons.filter((r) => r.startsWith('database'));
  return { status: reasons.length > 0 ? res.status : 200, reasons };
}

function expectNoPersonalData(text: string): void {
  for (const value of Object.values(PERSONAL)) expect(text).not.toContain(value);
}

describe('disk full (SQLite max_page_count on the daemon connection)', () => {
  it('enqueues answer 201 (stored) or 503 + Retry-After (not stored), status is critical with the SQLite error, /readyz 503 disk-full, and all recovers once space returns (readiness first, with no traffic)', async () => {
    const { call, ctx } = api;
    expect((await call('POST', '/v1/operations', transfer('before-full'))).status).toBe(201);
    const pages = ctx.database.sqlite.pragma('page_count', { simple: true }) as number;
    ctx.database.sqlite.pragma(`max_page_count = ${pages}`);

    // Enough that the free space left in the file runs out within the burst.
    const refs = Array.from({ length: 60 }, (_, i) => `full-${i}`);
    const op = (ref: string) => transfer(ref, { unitId: 5_000 + refs.indexOf(ref) });
    const answers = await Promise.all(refs.map((ref) => call('POST', '/v1/operations', op(ref))));
    const stored = storedRefs();
    const refused: string[] = [];
    answers.forEach((answer, i) => {
      const ref = refs[i]!;
      expect([201, 503], answer.text).toContain(answer.status);
      if (answer.status === 201) {
        expect(stored.has(ref), ref).toBe(true);
      } else {
        refused.push(ref);
        expect(stored.has(ref), ref).toBe(false);
        expect(answer.headers.get('retry-after')).toBe('30');
        expect(answer.json.error).toContain('SQLITE_FULL');
        expectNoPersonalData(answer.text);
      }
    });
    expect(refused.length).toBeGreaterThan(0);
    // The burst's last group may still have fit (a page with room left), and a write that succeeds
    // clears the problem. Write on until one is refused, so the last word on writing is a failure,
    // as it stays while the disk is full (seen under load: status 200 here).
    const extra = (i: number) => transfer(`full-extra-${i}`, { unitId: 6_000 + i });
    let extras = 0;
    for (; ; extras++) {
      const answer = await call('POST', '/v1/operations', extra(extras));
      if (answer.status === 503) break;
      expect(answer.status, answer.text).toBe(201);
      expect(extras, 'a write refused while the file is at its size limit').toBeLessThan(500);
    }

    // Liveness and reads go on.
    expect((await fetch(`${api.base}/healthz`)).status).toBe(200);
    expect((await call('GET', '/v1/operations?limit=5')).status).toBe(200);

    const status = await call('GET', '/status');
    expect(status.status).toBe(503);
    expect(status.json.status).toBe('critical');
    const problem = status.json.problems.find((p: { code: string }) => p.code === 'database-write-failed');
    expect(problem.severity).toBe('critical');
    expect(problem.message).toContain('SQLITE_FULL: database or disk is full');
    expectNoPersonalData(status.text);

    // Not ready while writes fail, naming the cause: the probe's trial write is refused as well.
    for (let i = 0; i < 2; i++)
      expect(await databaseReadiness()).toEqual({
        status: 503,
        reasons: ['database not writable: disk-full (SQLITE_FULL: database or disk is full)'],
      });

    // Space again: ready again before any client writes (the probe's trial write goes through).
    ctx.database.sqlite.pragma('max_page_count = 1000000');
    expect(await databaseReadiness()).toEqual({ status: 200, reasons: [] });
    expect(databaseFaultsFor(ctx.database.sqlite).facts().writeFailure).toBeNull();
    expect(
      ctx.database.sqlite
        .prepare(`SELECT count(*) FROM daemon_state WHERE key = 'readiness-trial'`)
        .pluck()
        .get(),
    ).toBe(0);

    // The refused operations are sent again by their apps and stored; status clears.
    for (const ref of refused) {
      const again = await call('POST', '/v1/operations', op(ref));
      expect(again.status, again.text).toBe(201);
    }
    expect((await call('POST', '/v1/operations', extra(extras))).status).toBe(201);
    expect(databaseFaultsFor(ctx.database.sqlite).facts().writeFailure).toBeNull();
    const after = await call('GET', '/status');
    expect(after.json.problems.map((p: { code: string }) => p.code)).not.toContain('database-write-failed');
    const extraRefs = Array.from({ length: extras + 1 }, (_, i) => `full-extra-${i}`);
    expect(storedRefs()).toEqual(new Set(['before-full', ...refs, ...extraRefs]));
  });
});
