import type pg from 'pg';
import { FEED_LOCK_KEY } from '../db/pgChanges.js';
import type { PgStateChangeSink, StateChange } from '../operations/effects.js';
import { deliveryRows, type OperationFacts } from './enqueue.js';
import type { Subscriber } from './events.js';

/**
 * The PostgreSQL twin of enqueue.ts's sink: the deliveries a state change owes the subscribers
 * (rows built by enqueue.ts's pure part), written on the store's client inside the transaction
 * that makes the change (operations/pgRows.ts `stateChangedPg` calls it before the feed's rows).
 */

/** The facts of these refs' rows, for their deliveries: one query. */
async function factsOf(client: pg.ClientBase, refs: string[]): Promise<Map<string, OperationFacts>> {
  const { rows } = await client.query<OperationFacts & { ref: string }>(
    `SELECT "marketplaceTransactionRef" AS ref, "operationType" AS "operationType", body, decision_reason, last_error
     FROM outbox WHERE "marketplaceTransactionRef" = ANY($1::text[])`,
    [refs],
  );
  return new Map(rows.map(({ ref, ...facts }) => [ref, facts]));
}

/** Inserts the deliveries these changes owe `subscribers`, on `client` (inside its transaction). */
async function enqueueDeliveriesPg(
  client: pg.ClientBase,
  subscribers: readonly Subscriber[],
  changes: readonly StateChange[],
): Promise<void> {
  const facts = await factsOf(
    client,
    changes.map((c) => c.ref),
  );
  const rows = deliveryRows(subscribers, changes, (ref) => facts.get(ref));
  if (rows.length === 0) return;
  // The feed's lock first (the append at commit takes it again, a no-op): delivery ids are then handed
  // out in commit order, so a claimer never sees a subscriber's id 6 while id 5 is still in
  // flight and sends it first (pgStore.ts). Held one statement longer than the feed needs.
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

/** The PostgreSQL sink that writes these subscribers' deliveries; none when nobody subscribes. */
export function pgDeliveriesSink(subscribers: readonly Subscriber[]): PgStateChangeSink | undefined {
  if (subscribers.length === 0) return undefined;
  return (client, changes) => enqueueDeliveriesPg(client, subscribers, changes);
}
