import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ManualClock } from '../../src/common/clock.js';
import { OPERATION_ALIASES } from '../../src/outbox/entry.js';
import type { ApiAnswer, apiCaller } from '../helpers/http.js';
import { PERSONAL, tokenization, transfer } from '../outbox/fixtures.js';

/**
 * The API's operations routes, the same steps on SQLite (operationsApi.sqlite.test.ts) and
 * PostgreSQL (operationsApi.pg.test.ts), in order on one API: enqueue answers (201, 200, 409 with the
 * entry, 422 with every field error), lists walked page by page with and without a state, one row
 * with its attempts, retry (failed, queued), cancel (queued, failed-by-lease, accepted, live lease)
 * and the 400s and 404s. The rows a person or the dispatcher would have moved are moved by the same
 * SQL on both stores. PostgreSQL's half also asks a SQLite API each step: the same bytes back.
 */

export const TOKEN = 'test-api-token-0123456789';
export const T0 = Date.parse('2026-03-01T12:00:00.000Z');

type Call = ReturnType<typeof apiCaller>;
type Answer = Pick<ApiAnswer, 'status' | 'text'>;

/** One API's store, for the moves a request cannot make (the operator's answer, a live lease). */
export interface Side {
  call: Call;
  /** Runs literal SQL valid on both dialects (quoted camelCase columns, ISO times). */
  exec(sql: string): Promise<void>;
}

/** What a request answered, following `nextCursor` to the last page. */
async function walk(call: Call, path: string): Promise<Answer[]> {
  const pages: Answer[] = [];
  let url: string | null = path;
  while (url !== null && pages.length < 50) {
    const answer = await call('GET', url);
    pages.push({ status: answer.status, text: answer.text });
    const next = answer.status === 200 ? (answer.json as { nextCursor?: string | null }).nextCursor : null;
    url = typeof next === 'string' ? `${path}${path.includes('?') ? '&' : '?'}cursor=${next}` : null;
  }
  return pages;
}

const refsOf = (pages: Answer[]) =>
  pages.flatMap((p) =>
    (JSON.parse(p.text) as { items: Array<{ marketplaceTransactionRef: string }> }).items.map(
      (i) => i.marketplaceTransactionRef,
    ),
  );
const json = (a: Answer) => JSON.parse(a.text) as Record<string, unknown>;

/** `next_attempt_at` → `nextAttemptAt` (written here: the check must not lean on the code it checks). */
const camel = (snake: string) => snake.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());

/**
 * The snake_case fields of an answer's object, each checked to sit beside its camelCase twin with
 * the same value (docs/api.md "Field names": the snake_case one is a deprecated alias).
 */
function aliasesOf(value: Record<string, unknown>): string[] {
  const snake = Object.keys(value).filter((k) => k.includes('_'));
  for (const name of snake) expect(value[camel(name)], `${name} beside ${camel(name)}`).toEqual(value[name]);
  return snake;
}

const ref = (r: string) => `"marketplaceTransactionRef" = '${r}'`;

/** A step: SQL moves first (the same on both stores), then requests; `expect` judges the answers. */
interface Step {
  name: string;
  sql?: string[];
  /** Milliseconds the clock moves before the step (default 1000: every step at its own time). */
  advance?: number;
  requests: (side: Side) => Promise<Answer[]>;
  expect: (answers: Answer[]) => void;
}

const one = (method: string, path: string, body?: unknown) => async (side: Side) => {
  const a = await side.call(method, path, body);
  return [{ status: a.status, text: a.text }];
};
const statuses =
  (...codes: number[]) =>
  (answers: Answer[]) =>
    expect(answers.map((a) => a.status)).toEqual(codes);

const STEPS: Step[] = [
  {
    name: 'POST a new operation: 201 with the stored entry, personal fields masked',
    requests: one('POST', '/v1/operations', transfer('op-1', { unitId: 501 })),
    expect: ([a]) => {
      expect(a!.status).toBe(201);
      expect(json(a!)).toMatchObject({
        id: 1,
        marketplaceTransactionRef: 'op-1',
        state: 'queued',
        attempts: 0,
      });
      expect(json(a!).next_attempt_at).toBe('2026-03-01T12:00:01.000Z');
      expect(aliasesOf(json(a!))).toEqual(OPERATION_ALIASES);
      for (const v of Object.values(PERSONAL)) expect(a!.text).not.toContain(v);
    },
  },
  {
    name: 'the same ref and body again (other key order and spelling): 200, the stored entry unchanged',
    requests: async (side) => {
      const same = Object.fromEntries(
        Object.entries(transfer('op-1', { unitId: 501, operationType: 'transfer' })).reverse(),
      );
      return one('POST', '/v1/operations', same)(side);
    },
    expect: ([a]) => {
      expect(a!.status).toBe(200);
      expect(json(a!)).toMatchObject({ id: 1, created_at: '2026-03-01T12:00:01.000Z' });
    },
  },
  {
    name: 'the same ref with another body: 409 with the stored entry',
    requests: one('POST', '/v1/operations', transfer('op-1', { unitId: 501, transactionAmount: 11 })),
    expect: ([a]) => {
      expect(a!.status).toBe(409);
      expect(json(a!).error).toMatch(/op-1 is already queued with a different body/);
      expect(json(a!).entry).toMatchObject({ id: 1, state: 'queued' });
      expect(aliasesOf(json(a!).entry as Record<string, unknown>)).toEqual(OPERATION_ALIASES);
    },
  },
  {
    name: 'an invalid notification: 422 naming every field',
    requests: one('POST', '/v1/operations', tokenization('bad-1', { transactionAmount: -1, extraField: 1 })),
    expect: ([a]) => {
      expect(a!.status).toBe(422);
      expect((json(a!).errors as unknown[]).length).toBeGreaterThanOrEqual(2);
    },
  },
  {
    // A refused INSERT (200, 409) takes an id on both stores: ids grow, not one by one.
    name: 'four more operations: 201 each, ids in order',
    requests: async (side) => {
      const answers: Answer[] = [];
      for (const [i, r] of ['op-2', 'op-3', 'op-4', 'op-5'].entries())
        answers.push(...(await one('POST', '/v1/operations', transfer(r, { unitId: 502 + i }))(side)));
      return answers;
    },
    expect: (answers) => {
      statuses(201, 201, 201, 201)(answers);
      const ids = answers.map((a) => Number(json(a).id));
      expect(ids).toEqual([...ids].sort((x, y) => x - y));
      expect(ids[0]).toBeGreaterThan(1);
    },
  },
  {
    name: 'op-2 failed after two attempts (the dispatcher would have): its entry with the attempt log, masked',
    sql: [
      `UPDATE outbox SET state = 'failed', attempts = 2, last_status = 500,
         last_error = 'operator answered 500 for ${PERSONAL.originUserEmail}',
         finished_at = '2026-03-01T12:00:07.250Z', updated_at = '2026-03-01T12:00:07.250Z' WHERE ${ref('op-2')}`,
      ...[1, 2].map(
        (n) => `INSERT INTO outbox_attempts (outbox_id, started_at, duration_ms, status_code, error)
           VALUES ((SELECT id FROM outbox WHERE ${ref('op-2')}), '2026-03-01T12:00:0${n}.125Z', ${100 + n}, 500,
                   'HTTP 500: ${PERSONAL.originUserEmail} unknown')`,
      ),
    ],
    requests: one('GET', '/v1/operations/op-2'),
    expect: ([a]) => {
      expect(a!.status).toBe(200);
      const entry = json(a!);
      expect(entry).toMatchObject({ state: 'failed', attempts: 2, finished_at: '2026-03-01T12:00:07.250Z' });
      const log = entry.attempt_log as Array<Record<string, unknown>>;
      expect(log.map((l) => [l.outbox_id, l.started_at, l.duration_ms, l.status_code])).toEqual([
        [entry.id, '2026-03-01T12:00:01.125Z', 101, 500],
        [entry.id, '2026-03-01T12:00:02.125Z', 102, 500],
      ]);
      expect(a!.text).not.toContain(PERSONAL.originUserEmail);
      // Every stored column under its camelCase name too, the same value (the masked error included).
      expect(aliasesOf(entry)).toEqual([...OPERATION_ALIASES, 'attempt_log']);
      expect(entry.lastError).toBe(entry.last_error);
      expect(entry.finishedAt).toBe('2026-03-01T12:00:07.250Z');
      for (const l of log)
        expect(aliasesOf(l)).toEqual(['outbox_id', 'started_at', 'duration_ms', 'status_code']);
      expect((entry.attemptLog as Array<Record<string, unknown>>)[1]).toMatchObject({
        outboxId: entry.id,
        startedAt: '2026-03-01T12:00:02.125Z',
        durationMs: 102,
        statusCode: 500,
      });
    },
  },
  {
    name: 'the list, 2 a page, to its end; then only failed, only queued',
    requests: async (side) => [
      ...(await walk(side.call, '/v1/operations?limit=2')),
      ...(await walk(side.call, '/v1/operations?state=failed')),
      ...(await walk(side.call, '/v1/operations?state=queued&limit=3')),
    ],
    expect: (answers) => {
      statuses(200, 200, 200, 200, 200, 200)(answers);
      expect(refsOf(answers.slice(0, 3))).toEqual(['op-1', 'op-2', 'op-3', 'op-4', 'op-5']);
      expect(json(answers[2]!).nextCursor).toBeNull();
      expect(refsOf(answers.slice(3, 4))).toEqual(['op-2']);
      expect(refsOf(answers.slice(4))).toEqual(['op-1', 'op-3', 'op-4', 'op-5']);
      // A list's entries carry both names too (no attempt log in a list).
      for (const item of json(answers[0]!).items as Array<Record<string, unknown>>)
        expect(aliasesOf(item)).toEqual(OPERATION_ALIASES);
    },
  },
  {
    name: 'a bad state, cursor or limit: 400; an unknown ref: 404 to show, retry and cancel',
    requests: async (side) => [
      ...(await one('GET', '/v1/operations?state=bogus')(side)),
      ...(await one('GET', '/v1/operations?cursor=abc')(side)),
      ...(await one('GET', '/v1/operations?limit=0')(side)),
      ...(await one('GET', '/v1/operations/nope')(side)),
      ...(await one('POST', '/v1/operations/nope/retry')(side)),
      ...(await one('POST', '/v1/operations/nope/cancel')(side)),
    ],
    expect: statuses(400, 400, 400, 404, 404, 404),
  },
  {
    name: 'retry of the failed op-2: back to queued, attempts 0, retried now; its log kept',
    requests: async (side) => [
      ...(await one('POST', '/v1/operations/op-2/retry')(side)),
      ...(await one('GET', '/v1/operations/op-2')(side)),
    ],
    expect: ([retried, shown]) => {
      statuses(200, 200)([retried!, shown!]);
      expect(json(retried!)).toMatchObject({
        state: 'queued',
        attempts: 0,
        finished_at: null,
        retried_at: '2026-03-01T12:00:09.000Z',
        next_attempt_at: '2026-03-01T12:00:09.000Z',
        retriedAt: '2026-03-01T12:00:09.000Z',
        nextAttemptAt: '2026-03-01T12:00:09.000Z',
      });
      expect(json(shown!).attempt_log).toHaveLength(2);
    },
  },
  {
    name: 'retry of a queued op-3 waiting out a backoff: due now',
    sql: [`UPDATE outbox SET next_attempt_at = '2026-03-01T13:00:00.000Z' WHERE ${ref('op-3')}`],
    requests: one('POST', '/v1/operations/op-3/retry'),
    expect: ([a]) => {
      expect(a!.status).toBe(200);
      expect(json(a!)).toMatchObject({ state: 'queued', next_attempt_at: '2026-03-01T12:00:10.000Z' });
    },
  },
  {
    name: 'op-3 accepted by the operator: cancel and retry refused (409)',
    sql: [
      `UPDATE outbox SET state = 'accepted', accepted_at = '2026-03-01T12:00:10.500Z', response = '{"ok":true}'
         WHERE ${ref('op-3')}`,
    ],
    requests: async (side) => [
      ...(await one('POST', '/v1/operations/op-3/cancel')(side)),
      ...(await one('POST', '/v1/operations/op-3/retry')(side)),
    ],
    expect: ([cancel, retry]) => {
      statuses(409, 409)([cancel!, retry!]);
      expect(json(cancel!).error).toMatch(/already accepted/);
      expect(json(retry!).error).toMatch(/cannot retry op-3: it is accepted/);
    },
  },
  {
    name: 'op-4 being sent under a live lease: cancel refused (409)',
    sql: [
      `UPDATE outbox SET state = 'sending', lease_owner = 'other', lease_until = '2999-01-01T00:00:00.000Z'
         WHERE ${ref('op-4')}`,
    ],
    requests: one('POST', '/v1/operations/op-4/cancel'),
    expect: ([a]) => {
      expect(a!.status).toBe(409);
      expect(json(a!).error).toMatch(
        /op-4: it is being sent right now \(lease until 2999-01-01T00:00:00.000Z\)/,
      );
    },
  },
  {
    name: 'op-5 sending under a lease that ran out: cancelled; cancel again is a no-op; retry refused',
    sql: [
      `UPDATE outbox SET state = 'sending', lease_owner = 'dead', lease_until = '2026-03-01T12:00:05.000Z'
         WHERE ${ref('op-5')}`,
    ],
    requests: async (side) => [
      ...(await one('POST', '/v1/operations/op-5/cancel')(side)),
      ...(await one('POST', '/v1/operations/op-5/cancel')(side)),
      ...(await one('POST', '/v1/operations/op-5/retry')(side)),
    ],
    expect: ([first, again, retry]) => {
      statuses(200, 200, 409)([first!, again!, retry!]);
      expect(json(first!)).toMatchObject({
        state: 'cancelled',
        lease_owner: null,
        finished_at: '2026-03-01T12:00:13.000Z',
        leaseOwner: null,
        finishedAt: '2026-03-01T12:00:13.000Z',
      });
      expect(again!.text).toBe(first!.text);
    },
  },
  {
    name: 'cancel of the queued op-1, then its enqueue again: 200 with the cancelled entry',
    requests: async (side) => [
      ...(await one('POST', '/v1/operations/op-1/cancel')(side)),
      ...(await one('POST', '/v1/operations', transfer('op-1', { unitId: 501 }))(side)),
    ],
    expect: ([cancel, again]) => {
      statuses(200, 200)([cancel!, again!]);
      expect(json(again!)).toMatchObject({ id: 1, state: 'cancelled' });
    },
  },
  {
    name: 'the whole list at the end, 100 a page and 1 a page',
    requests: async (side) => [
      ...(await walk(side.call, '/v1/operations')),
      ...(await walk(side.call, '/v1/operations?limit=1')),
    ],
    expect: (answers) => {
      expect(answers).toHaveLength(6);
      expect(refsOf(answers.slice(0, 1))).toEqual(['op-1', 'op-2', 'op-3', 'op-4', 'op-5']);
      expect(refsOf(answers.slice(1))).toEqual(['op-1', 'op-2', 'op-3', 'op-4', 'op-5']);
    },
  },
];

/** The API on the store under test, and the clock of its context (the steps' times are the clock's). */
export interface ApiUnderTest {
  clock: ManualClock;
  side: Side;
  /** An API on another store that must answer every step with the same bytes. */
  reference?: Side;
  close(): Promise<void>;
}

/** Registers the steps on the store `name`; `open` gives the suite its API, empty. */
export function operationsApiCases(name: string, open: () => Promise<ApiUnderTest>): void {
  describe(`the API operations routes on ${name}`, () => {
    let api: ApiUnderTest;
    beforeAll(async () => {
      api = await open();
    });
    afterAll(async () => {
      await api?.close();
    });

    async function run(step: Step, side: Side): Promise<Answer[]> {
      for (const sql of step.sql ?? []) await side.exec(sql);
      return step.requests(side);
    }

    it.each(STEPS)('$name', async (step) => {
      api.clock.advance(step.advance ?? 1000);
      // The reference first, as SQLite answered first when both ran side by side.
      const expected = api.reference && (await run(step, api.reference));
      const answers = await run(step, api.side);
      step.expect(answers);
      if (expected) expect(answers).toEqual(expected);
    });

    it('concurrent enqueues: each ref stored once (one 201, the repeats 200)', async () => {
      api.clock.advance(1000);
      const refs = Array.from({ length: 8 }, (_, i) => `many-${i}`);
      const side = api.side;
      const answers = await Promise.all(
        refs.flatMap((r, i) =>
          [0, 1, 2].map(async () => ({
            r,
            a: await side.call('POST', '/v1/operations', tokenization(r, { unitId: 600 + i })),
          })),
        ),
      );
      for (const r of refs) {
        const codes = answers
          .filter((x) => x.r === r)
          .map((x) => x.a.status)
          .sort();
        expect({ r, codes }).toEqual({ r, codes: [200, 200, 201] });
        const ids = new Set(answers.filter((x) => x.r === r).map((x) => (x.a.json as { id: number }).id));
        expect(ids.size).toBe(1);
      }
      const listed = refsOf(await walk(side.call, '/v1/operations?limit=1000'));
      expect(listed.filter((r) => r.startsWith('many-')).sort()).toEqual(refs);
    });
  });
}
