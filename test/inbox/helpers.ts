import { Writable } from 'node:stream';
import { pino } from 'pino';
import { Webhook } from 'standardwebhooks';
import type { Sqlite } from '../../src/sqlite/open.js';

/** A test secret: whsec_ + base64 of 32 bytes. */
export const SECRET = `whsec_${Buffer.from('inbox-test-secret-0123456789abcd').toString('base64')}`;
export const OTHER_SECRET = `whsec_${Buffer.from('another-secret-for-rotation-9876').toString('base64')}`;

/** Headers and body of a webhook signed by the official standardwebhooks library. */
export function signed(
  payload: unknown,
  options: { id?: string; atMs: number; secret?: string; body?: string },
): { headers: Record<string, string>; body: string } {
  const body = options.body ?? JSON.stringify(payload);
  const id = options.id ?? `msg_${Math.random().toString(36).slice(2)}`;
  const signature = new Webhook(options.secret ?? SECRET).sign(id, new Date(options.atMs), body);
  return {
    body,
    headers: {
      'content-type': 'application/json',
      'webhook-id': id,
      'webhook-timestamp': String(Math.floor(options.atMs / 1000)),
      'webhook-signature': signature,
    },
  };
}

/** A decision payload shaped like the simulator's. */
export function decisionPayload(
  ref: string,
  decision: 'approved' | 'rejected',
  reason?: string,
): Record<string, unknown> {
  return {
    type: `transaction.${decision}`,
    data: { marketplaceTransactionRef: ref, status: decision, ...(reason ? { reason } : {}) },
  };
}

/** Inserts an outbox row directly (the outbox's own enqueue is another area). */
export function insertOutboxRow(
  sqlite: Sqlite,
  ref: string,
  state: string,
  atIso = '2026-01-01T00:00:00.000Z',
): number {
  const row = sqlite
    .prepare(
      `INSERT INTO outbox (marketplaceTransactionRef, operationType, body, body_hash, state, next_attempt_at, created_at, updated_at, accepted_at)
       VALUES (?, 'Transfer', ?, 'hash', ?, ?, ?, ?, ?) RETURNING id`,
    )
    .get(
      ref,
      JSON.stringify({ marketplaceTransactionRef: ref }),
      state,
      atIso,
      atIso,
      atIso,
      state === 'accepted' ? atIso : null,
    ) as {
    id: number;
  };
  return row.id;
}

export function outboxRow(sqlite: Sqlite, ref: string) {
  return sqlite
    .prepare(
      'SELECT id, state, decision_reason, decided_at, finished_at FROM outbox WHERE marketplaceTransactionRef = ?',
    )
    .get(ref) as {
    id: number;
    state: string;
    decision_reason: string | null;
    decided_at: string | null;
    finished_at: string | null;
  };
}

export function events(sqlite: Sqlite) {
  return sqlite.prepare('SELECT * FROM webhook_events ORDER BY id').all() as Array<{
    webhook_id: string;
    outcome: string;
    decision: string | null;
    marketplaceTransactionRef: string | null;
    outbox_id: number | null;
    reason: string | null;
    event_type: string | null;
  }>;
}

export function count(sqlite: Sqlite, table: string): number {
  return (sqlite.prepare(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n;
}

/** A logger whose lines are kept for assertions. */
export function captureLogger() {
  const lines: Array<Record<string, unknown>> = [];
  const stream = new Writable({
    write(chunk, _enc, done) {
      for (const line of String(chunk).split('\n'))
        if (line) lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  return { log: pino({ level: 'debug' }, stream), lines };
}

/** Sum of a labelled counter by outcome. */
export async function outcomeCount(
  metric: { get(): Promise<{ values: Array<{ labels: Record<string, unknown>; value: number }> }> },
  outcome: string,
) {
  const { values } = await metric.get();
  return values.filter((v) => v.labels.outcome === outcome).reduce((a, v) => a + v.value, 0);
}
