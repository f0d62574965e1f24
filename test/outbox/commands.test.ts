import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { PassThrough, Readable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { runEnqueueCommand } from '../../src/commands/enqueue.js';
import { runOutboxCommand } from '../../src/commands/outbox.js';
import { sqliteOutbox } from '../../src/sqlite/operationsStore.js';
import { testContext } from '../helpers/context.js';
import { PERSONAL, tokenization, transfer } from './fixtures.js';

function sink() {
  const stream = new PassThrough();
  const chunks: string[] = [];
  stream.on('data', (d: Buffer) => chunks.push(String(d)));
  return { stream, text: () => chunks.join('') };
}

const contexts: ReturnType<typeof testContext>[] = [];
afterEach(() => {
  for (const c of contexts.splice(0)) c.dispose();
});

function setup() {
  const ctx = testContext();
  contexts.push(ctx);
  const out = sink();
  const err = sink();
  return { ctx, out, err, io: { stdout: out.stream, stderr: err.stream } };
}

describe('vcu-sync enqueue', () => {
  it('queues a file, prints the stored entry masked, and is idempotent', async () => {
    const { ctx, out, io } = setup();
    const file = path.join(ctx.dir, 'op.json');
    writeFileSync(file, JSON.stringify(transfer('cli-1')));
    expect(await runEnqueueCommand(cliOutbox(ctx), file, io)).toBe(0);
    const entry = JSON.parse(out.text());
    expect(entry).toMatchObject({ marketplaceTransactionRef: 'cli-1', state: 'queued' });
    expect(out.text()).not.toContain(PERSONAL.originUserName);
    expect(await runEnqueueCommand(cliOutbox(ctx), file, io)).toBe(0);
  });

  it('reads standard input with -, and lists every field error with exit 65', async () => {
    const { ctx, err, io } = setup();
    const stdin = Readable.from([
      JSON.stringify(tokenization('cli-2', { transactionAmount: 0, transactionUnit: 'tons' })),
    ]);
    expect(await runEnqueueCommand(cliOutbox(ctx), '-', { ...io, stdin })).toBe(65);
    expect(err.text()).toMatch(/notification is invalid \(2 problems\)/);
    expect(err.text()).toMatch(/transactionAmount: must be positive/);
    expect(err.text()).toMatch(/transactionUnit: must be tCO2e or kgCO2e/);
    expect(await runEnqueueCommand(cliOutbox(ctx), path.join(ctx.dir, 'missing.json'), io)).toBe(65);
    expect(err.text()).toMatch(/cannot read .*missing.json \(ENOENT\)/);
  });

  it('refuses another body under a taken ref with exit 1', async () => {
    const { ctx, err, io } = setup();
    const file = path.join(ctx.dir, 'op.json');
    writeFileSync(file, JSON.stringify(tokenization('cli-3')));
    expect(await runEnqueueCommand(cliOutbox(ctx), file, io)).toBe(0);
    writeFileSync(file, JSON.stringify(tokenization('cli-3', { transactionAmount: 99 })));
    expect(await runEnqueueCommand(cliOutbox(ctx), file, io)).toBe(1);
    expect(err.text()).toMatch(/cli-3 is already queued with a different body/);
  });
});

describe('vcu-sync outbox', () => {
  it('list, show, cancel, retry with exit codes', async () => {
    const { ctx, out, err, io } = setup();
    const file = path.join(ctx.dir, 'op.json');
    writeFileSync(file, JSON.stringify(transfer('cli-4')));
    await runEnqueueCommand(cliOutbox(ctx), file, {
      stdout: new PassThrough(),
      stderr: new PassThrough(),
    });
    expect(await runOutboxCommand(cliOutbox(ctx), 'list', undefined, io)).toBe(0);
    expect(out.text()).toMatch(/cli-4\s+Transfer\s+queued/);
    expect(
      await runOutboxCommand(cliOutbox(ctx), 'list', undefined, { ...io, json: true, state: 'queued' }),
    ).toBe(0);
    expect(await runOutboxCommand(cliOutbox(ctx), 'show', 'cli-4', io)).toBe(0);
    expect(out.text()).not.toContain(PERSONAL.destinationUserEmail);
    expect(await runOutboxCommand(cliOutbox(ctx), 'retry', 'cli-4', io)).toBe(0); // queued: made due now
    expect(await runOutboxCommand(cliOutbox(ctx), 'cancel', 'cli-4', io)).toBe(0);
    expect(await runOutboxCommand(cliOutbox(ctx), 'retry', 'cli-4', io)).toBe(1);
    expect(err.text()).toMatch(/cannot retry cli-4: it is cancelled/);
    expect(await runOutboxCommand(cliOutbox(ctx), 'show', 'nope', io)).toBe(3);
    expect(await runOutboxCommand(cliOutbox(ctx), 'show', undefined, io)).toBe(64);
    expect(await runOutboxCommand(cliOutbox(ctx), 'list', undefined, { ...io, state: 'bogus' })).toBe(64);
  });
});

/** The CLI's outbox on the test's file: its own commit per enqueue, as `vcu-sync enqueue` makes. */
function cliOutbox(ctx: ReturnType<typeof testContext>) {
  return sqliteOutbox(ctx, ctx.database.sqlite, { grouped: false });
}
