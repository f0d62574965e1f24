/**
 * Baselines on a bare Hono app on @hono/node-server, nothing else: for webhooks a handler that parses
 * the same body (as the issue defines the baseline) and answers 200; for enqueue one that parses the JSON body and answers 201 with it (no
 * validation, no database). Prints "listening PORT".
 */
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import { Hono } from 'hono';

const app = new Hono();
app.post('/webhooks/operator', async (c) => {
  await c.req.json();
  return c.json({ received: true }, 200);
});
app.post('/v1/operations', async (c) => c.json(await c.req.json(), 201));
const server = serve({ fetch: app.fetch, hostname: '127.0.0.1', port: 0 }, (info: AddressInfo) => {
  process.stdout.write(`listening ${info.port}\n`);
});
process.once('SIGTERM', () => server.close(() => process.exit(0)));
