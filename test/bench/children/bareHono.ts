/**
 * The webhook baseline: a bare Hono handler on @hono/node-server that reads the body and answers
 * 200 JSON, nothing else. Prints "listening PORT".
 */
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import { Hono } from 'hono';

const app = new Hono();
app.post('/webhooks/operator', async (c) => {
  await c.req.text();
  return c.json({ received: true }, 200);
});
const server = serve({ fetch: app.fetch, hostname: '127.0.0.1', port: 0 }, (info: AddressInfo) => {
  process.stdout.write(`listening ${info.port}\n`);
});
process.once('SIGTERM', () => server.close(() => process.exit(0)));
