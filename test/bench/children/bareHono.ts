/**
 * Baselines on a bare Hono app on @hono/node-server, nothing else: for webhooks a handler that parses
 * the same body (as the issue defines the baseline) and answers 200; for enqueue one that parses the JSON body and answers 201 with it (no
 * validation, no database), and, for both, when a database path is given as the first argument, the floor of
 * a durable 201 on this disk: one that parses the body, inserts it into a WAL-mode SQLite file with
 * `synchronous = FULL` (an fsync per commit, as vcu-sync's), the requests of one loop turn in one
 * commit, and answers 201. Prints "listening PORT".
 */
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import Database from 'better-sqlite3';
import { Hono } from 'hono';

const app = new Hono();
app.post('/webhooks/operator', async (c) => {
  await c.req.json();
  return c.json({ received: true }, 200);
});
app.post('/v1/operations', async (c) => c.json(await c.req.json(), 201));
const dbPath = process.argv[2];
if (dbPath) {
  const db = new Database(dbPath);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  db.exec('CREATE TABLE IF NOT EXISTS ops (id INTEGER PRIMARY KEY, body TEXT NOT NULL)');
  const insert = db.prepare('INSERT INTO ops (body) VALUES (?)');
  // The least a durable 201 at this rate needs: the requests of one turn of the loop in one
  // transaction (one fsync), as any group commit does; an fsync per request cannot keep up here.
  let group: Array<{ text: string; done: () => void }> = [];
  const commit = db.transaction((texts: readonly string[]) => {
    for (const text of texts) insert.run(text);
  });
  const flush = () => {
    const batch = group;
    group = [];
    commit(batch.map((g) => g.text));
    for (const g of batch) g.done();
  };
  const store = (body: unknown) =>
    new Promise<void>((done) => {
      if (group.push({ text: JSON.stringify(body), done }) === 1) setImmediate(flush);
    });
  app.post('/durable/v1/operations', async (c) => {
    const body = await c.req.json();
    await store(body);
    return c.json(body, 201);
  });
  app.post('/durable/webhooks/operator', async (c) => {
    await store(await c.req.json());
    return c.json({ received: true }, 200);
  });
}
const server = serve({ fetch: app.fetch, hostname: '127.0.0.1', port: 0 }, (info: AddressInfo) => {
  process.stdout.write(`listening ${info.port}\n`);
});
process.once('SIGTERM', () => server.close(() => process.exit(0)));
