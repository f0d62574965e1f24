import type pg from 'pg';
import { inPgTransaction } from '../db/pg.js';
import type { StateChangeSink } from '../operations/effects.js';
import { type Masker, personalValuesOf } from '../operations/personal.js';
import { iso } from '../operations/pgRows.js';
import { recordDecisionPg } from '../operations/pgStore.js';
import type { OperationSummary } from '../operations/reads.js';
import {
  type DecisionEffect,
  decisionEffect,
  depositedIds,
  type EventOutcome,
  isReplay,
  outcomeFor,
  type RecordResult,
} from './correlate.js';
import type { ConflictRow, PendingEvent } from './eventStore.js';
import type { PayloadFields } from './interpret.js';
import { type EventText, maskedEventText, maskIncomingWith } from './mask.js';
import { type RereadResult, rereadMeaning } from './reread.js';
import type { InboxStore, ReceivedWebhook } from './storeSeam.js';
import type { Vocabulary } from './vocabulary.js';

/**
 * The inbox store on PostgreSQL, shared by several replicas receiving webhooks at once. The same
 * decisions as the SQLite path (outcomeFor, the transition table through recordDecisionPg), each
 * webhook one transaction. What makes concurrent replicas safe:
 * - every path that decides on an operation first locks its outbox row (`FOR UPDATE`), so
 *   decisions on one row are taken one at a time, each against the state the previous committed
 *   (a decision received here applies to a row another replica queued and accepted);
 * - a replay delivered to two replicas at the same moment meets on the unique index
 *   (webhook_id, body_hash): the second insert waits for the first commit, then `ON CONFLICT DO
 *   NOTHING` stores nothing and the delivery is answered as a replay; an event is always inserted
 *   before anything it decides is applied, so the replay changes nothing;
 * - a decision whose row does not exist yet is stored `pending` and applied when the row is
 *   accepted (`afterAccepted`, the next decision on that row, or `maintain`'s sweep).
 * Locks are taken rows first, the feed's lock last (recordChangesPg), so these never deadlock with
 * the operations store; a batch locks its rows up front, in id order.
 */

const REF = '"marketplaceTransactionRef"';

/** Options of {@link PgInboxStore}. */
export interface PgInboxStoreOptions {
  /** What each decision applied writes in its transaction besides the feed (default: nothing). */
  onStateChange?: StateChangeSink;
}

/** An outbox row locked for a decision, with the body its personal values come from. */
type LockedRow = OperationSummary & { body: string };

export class PgInboxStore implements InboxStore {
  private readonly sink: StateChangeSink | undefined;

  constructor(
    private readonly pool: pg.Pool,
    options: PgInboxStoreOptions = {},
  ) {
    this.sink = options.onStateChange;
  }

  receive(webhook: ReceivedWebhook): Promise<RecordResult> {
    return inPgTransaction(this.pool, (client) => this.record(client, webhook));
  }

  /** recordEvent (correlate.ts) on PostgreSQL, inside the webhook's transaction. */
  private async record(client: pg.ClientBase, webhook: ReceivedWebhook): Promise<RecordResult> {
    const { receivedAt: now, webhookId } = webhook;
    const row = webhook.meaning.ref === null ? undefined : await lockRow(client, webhook.meaning.ref);
    // Personal data the operator quoted is masked before anything is stored, logged or applied.
    const { body, meaning } = maskIncomingWith(personalValuesOf(row?.body), webhook.body, webhook.meaning);
    const replay: RecordResult = { outcome: 'duplicate', replay: true, idReused: false, effects: [] };
    const prior = await client.query<{ body_hash: string | null; body: string | null }>(
      `SELECT body_hash, CASE WHEN body_hash IS NULL THEN body END AS body FROM webhook_events WHERE webhook_id = $1`,
      [webhookId],
    );
    if (isReplay(prior.rows, webhook.bodyHash)) return replay;
    const idReused = prior.rows.length > 0;
    const store = async (outcome: EventOutcome, outboxId: number | null): Promise<boolean> => {
      const { rowCount } = await client.query(
        `INSERT INTO webhook_events (webhook_id, received_at, event_type, event_status, ${REF}, decision, reason,
                                     body, body_hash, id_reused, outbox_id, outcome, applied_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
         ON CONFLICT (webhook_id, body_hash) DO NOTHING`,
        [
          webhookId,
          now,
          meaning.type,
          meaning.status,
          meaning.ref,
          meaning.decision,
          meaning.reason,
          body,
          webhook.bodyHash,
          idReused,
          outboxId,
          outcome,
          outcome === 'applied' ? now : null,
        ],
      );
      return rowCount === 1;
    };
    const done = (outcome: EventOutcome, effects: DecisionEffect[]): RecordResult => {
      if (idReused) effects.push({ kind: 'id-reused', webhookId, ref: meaning.ref, outcome });
      return { outcome, replay: false, idReused, effects };
    };

    if (meaning.decision === 'deposit' && meaning.deposit) {
      // Insert the event first: a replayed id must not touch custody_ids again.
      if (!(await store('applied', null))) return replay;
      const ids = await addCustodyIds(client, depositedIds(meaning.deposit), now);
      return done('applied', [{ kind: 'deposit', ids }]);
    }
    if (meaning.undecided !== null) {
      if (!(await store('undecided', row?.id ?? null))) return replay;
      return done('undecided', [
        {
          kind: 'undecided',
          ref: meaning.ref,
          outboxId: row?.id ?? null,
          webhookId,
          type: meaning.type,
          status: meaning.status,
          why: meaning.undecided,
        },
      ]);
    }
    if ((meaning.decision !== 'approved' && meaning.decision !== 'rejected') || meaning.ref === null) {
      return (await store('ignored', null)) ? done('ignored', []) : replay;
    }
    if (!row) return (await store('pending', null)) ? done('pending', []) : replay;
    const ref = meaning.ref;
    // Earlier decisions still pending for an accepted row go first, so order of arrival decides.
    const effects = await this.applyPending(client, row, ref, now);
    const outcome = outcomeFor(row.state, meaning.decision);
    if (!(await store(outcome, row.id))) return { ...replay, effects };
    const applied = await this.applyOne(client, row, ref, meaning.decision, meaning.reason, webhookId, now);
    if (applied.effect) effects.push(applied.effect);
    return done(outcome, effects);
  }

  /** applyOne (correlate.ts) on a row this transaction has locked. */
  private async applyOne(
    client: pg.ClientBase,
    row: OperationSummary,
    ref: string,
    decision: 'approved' | 'rejected',
    reason: string | null,
    webhookId: string,
    now: string,
  ): Promise<{ outcome: EventOutcome; effect?: DecisionEffect }> {
    const outcome = outcomeFor(row.state, decision);
    const effect = decisionEffect(outcome, row, ref, decision, reason, webhookId);
    if (outcome === 'applied') {
      await recordDecisionPg(client, this.sink, { id: row.id, ref, decision, reason, now });
      row.state = decision;
    }
    return effect ? { outcome, effect } : { outcome };
  }

  /** applyPendingDecisions (correlate.ts) on a row this transaction has locked. */
  private async applyPending(
    client: pg.ClientBase,
    row: OperationSummary,
    ref: string,
    now: string,
  ): Promise<DecisionEffect[]> {
    if (row.state !== 'accepted') return [];
    const { rows: pending } = await client.query<PendingEvent>(
      `SELECT id::float8 AS id, webhook_id, decision, reason FROM webhook_events
        WHERE ${REF} = $1 AND outcome = 'pending' ORDER BY id`,
      [ref],
    );
    const effects: DecisionEffect[] = [];
    for (const event of pending) {
      const { outcome, effect } = await this.applyOne(
        client,
        row,
        ref,
        event.decision,
        event.reason,
        event.webhook_id,
        now,
      );
      await setOutcome(client, event.id, outcome, row.id, outcome === 'applied' ? now : null);
      if (effect) effects.push(effect);
    }
    return effects;
  }

  async recordRejection(atIso: string, status: number, reason: string): Promise<void> {
    await this.pool.query('INSERT INTO webhook_rejections (at, status, reason) VALUES ($1, $2, $3)', [
      atIso,
      status,
      reason.slice(0, 200),
    ]);
  }

  maintain(nowIso: string, pruneBeforeIso: string): Promise<{ effects: DecisionEffect[]; pruned: number }> {
    return inPgTransaction(this.pool, async (client) => {
      // Rows another transaction holds are being decided there (it applies their pending first).
      const { rows } = await client.query<OperationSummary & { ref: string }>(
        `SELECT o.id::float8 AS id, o.${REF} AS ref, o.state FROM outbox o
          WHERE o.state = 'accepted'
            AND EXISTS (SELECT 1 FROM webhook_events e WHERE e.${REF} = o.${REF} AND e.outcome = 'pending')
          ORDER BY o.id FOR UPDATE OF o SKIP LOCKED`,
      );
      const effects: DecisionEffect[] = [];
      for (const row of rows) effects.push(...(await this.applyPending(client, row, row.ref, nowIso)));
      const pruned = await client.query('DELETE FROM webhook_rejections WHERE at < $1', [pruneBeforeIso]);
      return { effects, pruned: pruned.rowCount ?? 0 };
    });
  }

  /**
   * rereadUndecided (reread.ts) on PostgreSQL: one transaction per event that now decides, which
   * first takes the event back from `undecided` (so two replicas starting at once act on it once),
   * then its row, as a webhook does.
   */
  async rereadUndecided(
    fields: PayloadFields,
    vocabulary: Vocabulary,
    nowIso: string,
  ): Promise<RereadResult> {
    const { rows: events } = await this.pool.query<{ id: number; webhook_id: string; body: string }>(
      `SELECT id::float8 AS id, webhook_id, body FROM webhook_events WHERE outcome = 'undecided' ORDER BY id`,
    );
    const effects: DecisionEffect[] = [];
    let resolved = 0;
    for (const event of events) {
      const meaning = rereadMeaning(event.body, fields, vocabulary);
      if (meaning === null) continue;
      const done = await inPgTransaction(this.pool, async (client) => {
        const still = await client.query(
          `SELECT 1 FROM webhook_events WHERE id = $1 AND outcome = 'undecided' FOR UPDATE`,
          [event.id],
        );
        if (still.rowCount === 0) return null; // another replica read it again first
        const { decision, ref, reason } = meaning;
        const redecide = (
          outcome: EventOutcome,
          why: string | null,
          outboxId: number | null,
          at: string | null,
        ) =>
          client.query(
            'UPDATE webhook_events SET decision = $1, reason = $2, outcome = $3, outbox_id = $4, applied_at = $5 WHERE id = $6',
            [decision, why, outcome, outboxId, at, event.id],
          );
        if (decision === 'deposit' && meaning.deposit) {
          const ids = await addCustodyIds(client, depositedIds(meaning.deposit), nowIso);
          await redecide('applied', null, null, nowIso);
          return [{ kind: 'deposit', ids } satisfies DecisionEffect];
        }
        if ((decision !== 'approved' && decision !== 'rejected') || ref === null) {
          await redecide('ignored', null, null, null);
          return [];
        }
        const row = await lockRow(client, ref);
        if (!row || row.state === 'accepted' || outcomeFor(row.state, decision) === 'pending') {
          // Joins the pending decisions of its operation; applied in arrival order once it is accepted.
          await redecide('pending', reason, null, null);
          return row ? await this.applyPending(client, row, ref, nowIso) : [];
        }
        // Already decided (by a later webhook) or given up: a duplicate, a conflict, or ignored.
        const applied = await this.applyOne(client, row, ref, decision, reason, event.webhook_id, nowIso);
        await redecide(applied.outcome, reason, row.id, null);
        return applied.effect ? [applied.effect] : [];
      });
      if (done === null) continue;
      resolved += 1;
      effects.push(...done);
    }
    return { resolved, effects };
  }

  async decisionConflicts(): Promise<ConflictRow[]> {
    const { rows } = await this.pool.query<ConflictRow>(
      `SELECT id::float8 AS id, webhook_id, ${REF}, decision, ${iso('received_at')} AS received_at,
              outbox_id::float8 AS outbox_id
         FROM webhook_events WHERE outcome = 'conflict' ORDER BY id`,
    );
    return rows;
  }

  afterAccepted(op: { id: number; ref: string; mask: Masker }, nowIso: string): Promise<DecisionEffect[]> {
    return inPgTransaction(this.pool, async (client) => {
      const row = await lockRow(client, op.ref);
      if (row?.id !== op.id || row.state !== 'accepted') return [];
      await maskEvents(client, op.ref, op.mask);
      return this.applyPending(client, row, op.ref, nowIso);
    });
  }

  maskEventsOf(ref: string, mask: Masker): Promise<number> {
    return inPgTransaction(this.pool, (client) => maskEvents(client, ref, mask));
  }
}

/** The operation `ref` names, locked until the transaction ends (undefined: not queued yet). */
async function lockRow(client: pg.ClientBase, ref: string): Promise<LockedRow | undefined> {
  const { rows } = await client.query<LockedRow>(
    `SELECT id::float8 AS id, state, body FROM outbox WHERE ${REF} = $1 FOR UPDATE`,
    [ref],
  );
  return rows[0];
}

function setOutcome(
  client: pg.ClientBase,
  eventId: number,
  outcome: EventOutcome,
  outboxId: number | null,
  appliedAt: string | null,
): Promise<unknown> {
  return client.query(
    'UPDATE webhook_events SET outcome = $1, outbox_id = $2, applied_at = $3 WHERE id = $4',
    [outcome, outboxId, appliedAt, eventId],
  );
}

/** Puts a deposit's ids in custody (an id whose custody had ended goes back in); returns how many rows changed. */
async function addCustodyIds(
  client: pg.ClientBase,
  ids: ReadonlyArray<[kind: string, id: string]>,
  now: string,
): Promise<number> {
  if (ids.length === 0) return 0;
  // DISTINCT: one statement may not upsert the same row twice (a deposit naming an id twice).
  const { rowCount } = await client.query(
    `INSERT INTO custody_ids (kind, id, source, added_at)
     SELECT DISTINCT k, i, 'webhook', $3::timestamptz FROM unnest($1::text[], $2::text[]) AS d(k, i)
     ON CONFLICT (kind, id) DO UPDATE SET ended_at = NULL`,
    [ids.map(([kind]) => kind), ids.map(([, id]) => id), now],
  );
  return rowCount ?? 0;
}

/**
 * maskEventsOf (mask.ts) inside the caller's transaction: the store's maskEventsOf, and the
 * outbox's scrub (outbox/pgHooks.ts), which masks a batch's events in the batch's transaction.
 */
export async function maskEvents(client: pg.ClientBase, ref: string, mask: Masker): Promise<number> {
  const { rows } = await client.query<EventText>(
    `SELECT id::float8 AS id, body, reason FROM webhook_events WHERE ${REF} = $1 ORDER BY id FOR UPDATE`,
    [ref],
  );
  let changed = 0;
  for (const e of rows) {
    const masked = maskedEventText(e, mask);
    if (!masked) continue;
    await client.query('UPDATE webhook_events SET body = $1, reason = $2 WHERE id = $3', [
      masked.body,
      masked.reason,
      masked.id,
    ]);
    changed += 1;
  }
  return changed;
}
