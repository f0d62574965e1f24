import { PassThrough } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { runDeliveriesCommand } from '../../src/commands/deliveries.js';
import { runOutboxCommand } from '../../src/commands/outbox.js';
import { listText, textTable } from '../../src/commands/textTable.js';
import { commitQueueFor } from '../../src/sqlite/commitQueue.js';
import { sqliteOutbox } from '../../src/sqlite/operationsStore.js';
import { DeliveriesStore } from '../../src/subscribers/deliveriesStore.js';
import { testContext } from '../helpers/context.js';
import { enqueueOperation, transfer } from '../outbox/fixtures.js';

/**
 * `outbox list` and `deliveries list` in one table style: the same headers for the same things,
 * "-" for an empty cell, and the same "more" line naming the --cursor that shows the next page.
 */

const contexts: ReturnType<typeof testContext>[] = [];
afterEach(() => {
  for (const c of contexts.splice(0)) c.dispose();
});

function io() {
  const out = new PassThrough();
  const err = new PassThrough();
  let text = '';
  let errors = '';
  out.on('data', (d: Buffer) => {
    text += String(d);
  });
  err.on('data', (d: Buffer) => {
    errors += String(d);
  });
  return { streams: { stdout: out, stderr: err }, out: () => text, err: () => errors };
}

describe('textTable and listText', () => {
  it('pads columns, folds whitespace, shows "-" for an empty cell, cuts at 80', () => {
    const table = textTable(
      [
        ['ID', 'id'],
        ['LAST_ERROR', 'error'],
      ] as const,
      [{ id: 1, error: 'a\n  b' }, { id: 22 }, { id: 3, error: 'x'.repeat(100) }],
    );
    expect(table.split('\n')).toEqual(['ID  LAST_ERROR', '1   a b', '22  -', `3   ${'x'.repeat(80)}`]);
  });

  it('adds the line naming the next page only when there is one', () => {
    const columns = [['ID', 'id']] as const;
    expect(listText(columns, { items: [{ id: 1 }], nextCursor: null })).toBe('ID\n1\n');
    expect(listText(columns, { items: [{ id: 1 }], nextCursor: '1' })).toBe(
      'ID\n1\n(more: add --cursor 1 for the next page)\n',
    );
  });
});

/** `deliveries list` over the test context's SQLite file. */
function listDeliveries(
  ctx: ReturnType<typeof testContext>,
  streams: Parameters<typeof runDeliveriesCommand>[4],
) {
  return runDeliveriesCommand(
    ctx,
    new DeliveriesStore(commitQueueFor(ctx.database.sqlite)),
    'list',
    undefined,
    streams,
  );
}

describe('the two list commands', () => {
  it('share their headers for the same things', async () => {
    const ctx = testContext();
    contexts.push(ctx);
    const outbox = io();
    const deliveries = io();
    expect(
      await runOutboxCommand(
        sqliteOutbox(ctx, ctx.database.sqlite, { grouped: false }),
        'list',
        undefined,
        outbox.streams,
      ),
    ).toBe(0);
    expect(await listDeliveries(ctx, deliveries.streams)).toBe(0);
    expect(outbox.out()).toBe('ID  REF  TYPE  STATE  ATTEMPTS  NEXT_ATTEMPT  LAST_ERROR\n');
    expect(deliveries.out()).toBe(
      'ID  SUBSCRIBER  EVENT  REF  STATE  ORPHANED  ATTEMPTS  NEXT_ATTEMPT  LAST_ERROR\n',
    );
  });

  it('outbox list pages by --cursor, and says where the next page starts', async () => {
    const ctx = testContext();
    contexts.push(ctx);
    for (let i = 0; i < 101; i++) enqueueOperation(ctx, transfer(`page-${i}`, { unitId: 97_000 + i }));
    const first = io();
    expect(
      await runOutboxCommand(
        sqliteOutbox(ctx, ctx.database.sqlite, { grouped: false }),
        'list',
        undefined,
        first.streams,
      ),
    ).toBe(0);
    const lines = first.out().trimEnd().split('\n');
    expect(lines).toHaveLength(1 + 100 + 1);
    expect(lines[1]).toMatch(/^1\s+page-0\s+Transfer\s+queued\s+0\s+\S+\s+-$/);
    expect(lines.at(-1)).toBe('(more: add --cursor 100 for the next page)');
    const second = io();
    expect(
      await runOutboxCommand(sqliteOutbox(ctx, ctx.database.sqlite, { grouped: false }), 'list', undefined, {
        ...second.streams,
        cursor: '100',
      }),
    ).toBe(0);
    expect(second.out().trimEnd().split('\n').slice(1)).toEqual([
      expect.stringMatching(/^101\s+page-100\s+Transfer\s+queued/),
    ]);
  });

  it('deliveries list pages by --cursor too, and refuses one that is not a cursor (64)', async () => {
    const ctx = testContext();
    contexts.push(ctx);
    const insert = ctx.database.sqlite.prepare(
      `INSERT INTO deliveries (subscriber, event_type, ref, webhook_id, body, state, attempts, next_attempt_at, created_at, updated_at)
       VALUES ('erp', 'operation.accepted', ?, ?, '{}', 'pending', 0, ?, ?, ?)`,
    );
    const at = new Date().toISOString();
    for (let i = 0; i < 101; i++) insert.run(`d-${i}`, `msg_list_${i}`, at, at, at);
    const first = io();
    expect(await listDeliveries(ctx, first.streams)).toBe(0);
    const lines = first.out().trimEnd().split('\n');
    expect(lines).toHaveLength(1 + 100 + 1);
    // erp is not in this configuration, so its rows are orphaned.
    expect(lines[1]).toMatch(/^1\s+erp\s+operation\.accepted\s+d-0\s+pending\s+true\s+0\s+\S+\s+-$/);
    expect(lines.at(-1)).toBe('(more: add --cursor 100 for the next page)');
    const second = io();
    expect(
      await listDeliveries(ctx, {
        ...second.streams,
        cursor: '100',
      }),
    ).toBe(0);
    expect(second.out().trimEnd().split('\n')).toHaveLength(2);
    const bad = io();
    expect(
      await listDeliveries(ctx, {
        ...bad.streams,
        cursor: 'x',
      }),
    ).toBe(64);
    expect(bad.err()).toContain('--cursor must be a nextCursor value');
  });
});
