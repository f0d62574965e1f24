import http from 'node:http';
import got from 'got';
import type pg from 'pg';

/** One answered POST of a claimed row, as the bare baseline settles it. */
export interface BareOutcome {
  id: number;
  status: number;
  response: string;
}

/**
 * The bind values of the baseline's one settle statement: the outcomes as parallel arrays (ids,
 * statuses, responses) for `unnest`, in id order so concurrent settles lock rows in one order.
 */
export function settleArrays(outcomes: readonly BareOutcome[]): [number[], number[], string[]] {
  const sorted = [...outcomes].sort((a, b) => a.id - b.id);
  return [sorted.map((o) => o.id), sorted.map((o) => o.status), sorted.map((o) => o.response)];
}

/** Claims up to $3 due rows for owner $1 (lease until $2): one statement, SKIP LOCKED. */
const CLAIM = `UPDATE outbox SET state = 'sending', lease_owner = $1, lease_until = $2::timestamptz,
    attempts = attempts + 1, updated_at = now()
  WHERE id IN (SELECT id FROM outbox WHERE state = 'queued' AND next_attempt_at <= now()
               ORDER BY id LIMIT $3 FOR UPDATE SKIP LOCKED)
  RETURNING id::float8 AS id, body`;

/** Settles a batch as accepted: one multi-row UPDATE from unnest, guarded by the lease owner. */
const SETTLE = `UPDATE outbox SET state = 'accepted', last_status = s.status, response = s.response,
    last_error = NULL, accepted_at = now(), updated_at = now(), lease_owner = NULL, lease_until = NULL
  FROM unnest($1::int8[], $2::int4[], $3::text[]) AS s(id, status, response)
  WHERE outbox.id = s.id AND outbox.lease_owner = $4`;

/**
 * The bare PostgreSQL baseline of an outbox drain: claim up to `concurrency` rows with one
 * `UPDATE ... WHERE id IN (SELECT ... FOR UPDATE SKIP LOCKED LIMIT k) RETURNING`, POST their
 * bodies at once with got (keep-alive, `concurrency` sockets), settle them with one multi-row
 * UPDATE, until a claim finds nothing. No feed, no attempts log, no retry policy. Returns the rows
 * settled.
 */
export async function barePgDrain(
  notifyUrl: string,
  pool: pg.Pool,
  options: { concurrency: number; apiKey: string },
): Promise<number> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: options.concurrency });
  const client = got.extend({
    agent: { http: agent },
    retry: { limit: 0 },
    timeout: { request: 30_000 },
    headers: { apikey: options.apiKey, 'content-type': 'application/json' },
  });
  const owner = 'bare-drain';
  let settled = 0;
  try {
    for (;;) {
      const leaseUntil = new Date(Date.now() + 60_000).toISOString();
      const { rows } = await pool.query<{ id: number; body: string }>(CLAIM, [
        owner,
        leaseUntil,
        options.concurrency,
      ]);
      if (rows.length === 0) break;
      const outcomes = await Promise.all(
        rows.map(async (row): Promise<BareOutcome> => {
          const res = await client.post(notifyUrl, { body: row.body, throwHttpErrors: false });
          if (res.statusCode >= 300) throw new Error(`baseline POST answered ${res.statusCode}`);
          return { id: row.id, status: res.statusCode, response: res.body };
        }),
      );
      const result = await pool.query(SETTLE, [...settleArrays(outcomes), owner]);
      settled += result.rowCount ?? 0;
    }
  } finally {
    agent.destroy();
  }
  return settled;
}
