import type pg from 'pg';
import { FEED_LOCK_KEY, recordChangesPg } from '../db/pgChanges.js';
import { deliveryRows, type OperationFacts } from '../subscribers/enqueue.js';
import type { Subscriber } from '../subscribers/subscribers.js';
import type { GuardParams } from './rows.js';
import { feedRows, type StateChange } from './store.js';

/**
 * What the PostgreSQL operations store shares across its statements: how rows read back exactly
 * as SQLite's (`OperationRow`: ISO strings, numeric ids), the guards' placeholders, and the one
 * place every state change passes (deliveries, then the feed: recordChangesPg's rows are appended
 * under the feed's lock as the transaction commits; the lock is taken before the deliveries when
 * there are some).
 */

/** Every statement binds $1 = now, $2 = owner, so the transition table's guards read the same. */
export const PG_GUARD: GuardParams = { now: '$1::timestamptz', owner: '$2' };

/** A timestamptz as SQLite stores it: `Date#toISOString()` (ms, `Z`). */
export const iso = (col: string) => `to_char(${col} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/** The outbox's columns in SQLite's table order, so an entry prints the same bytes on both stores. */
const COLUMNS = [
  'order_key',
  'body',
  'body_hash',
  'state',
  'attempts',
  'next_attempt_at',
  'lease_owner',
  'lease_until',
  'last_error',
  'last_status',
  'response',
  'decision_reason',
  'created_at',
  'updated_at',
  'accepted_at',
  'decided_at',
  'finished_at',
  'scrubbed_at',
  'retried_at',
];

/** The timestamptz columns, read back as SQLite's ISO text: every `*_at`, and the lease's end. */
const isTime = (column: string) => column.endsWith('_at') || column === 'lease_until';

/** The outbox row as `OperationRow` (camelCase columns are quoted: PostgreSQL folds the rest). */
export function operationColumns(alias = ''): string {
  const a = alias;
  return [
    `${a}id::float8 AS id`,
    `${a}"marketplaceTransactionRef"`,
    `${a}"operationType"`,
    ...COLUMNS.map((c) => (isTime(c) ? `${iso(a + c)} AS ${c}` : a + c)),
  ].join(', ');
}

/** The facts of these refs' rows, for their deliveries: one query. */
async function factsOf(client: pg.ClientBase, refs: string[]): Promise<Map<string, OperationFacts>> {
  const { rows } = await client.query<OperationFacts & { ref: string }>(
    `SELECT "marketplaceTransactionRef" AS ref, "operationType" AS "operationType", body, decision_reason, last_error
     FROM outbox WHERE "marketplaceTransactionRef" = ANY($1::text[])`,
    [refs],
  );
  return new Map(rows.map(({ ref, ...facts }) => [ref, facts]));
}

/**
 * The PostgreSQL twin of store.ts `stateChanged`: the subscribers' deliveries (rows built by
 * enqueue.ts's pure part), then the feed rows, last in the transaction.
 */
export async function stateChangedPg(
  client: pg.ClientBase,
  subscribers: readonly Subscriber[],
  changes: readonly StateChange[],
): Promise<void> {
  if (changes.length === 0) return;
  if (subscribers.length > 0) {
    const facts = await factsOf(
      client,
      changes.map((c) => c.ref),
    );
    const rows = deliveryRows(subscribers, changes, (ref) => facts.get(ref));
    if (rows.length > 0) {
      // The feed's lock first (the append at commit takes it again, a no-op): delivery ids are then handed
      // out in commit order, so a claimer never sees a subscriber's id 6 while id 5 is still in
      // flight and sends it first (subscribers/pgStore.ts). Held one statement longer than the feed needs.
      await client.query('SELECT pg_advisory_xact_lock($1)', [FEED_LOCK_KEY]);
      await client.query(
        `INSERT INTO deliveries (subscriber, event_type, ref, webhook_id, body, state, attempts, next_attempt_at,
                                 created_at, updated_at)
         SELECT s, t, r, w, b, 'pending', 0, a, a, a
         FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::timestamptz[]) AS d(s, t, r, w, b, a)`,
        [
          rows.map((d) => d.subscriber),
          rows.map((d) => d.type),
          rows.map((d) => d.ref),
          rows.map((d) => d.webhookId),
          rows.map((d) => d.body),
          rows.map((d) => d.at),
        ],
      );
    }
  }
  recordChangesPg(client, feedRows(changes));
}
