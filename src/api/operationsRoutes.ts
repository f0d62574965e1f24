import type { Hono } from 'hono';
import type { AppContext } from '../context.js';
import { enqueueOperation } from '../outbox/enqueue.js';
import { toEntry } from '../outbox/entry.js';
import { cancelOperation, listOperations, retryOperation, showOperation } from '../outbox/steer.js';
import { readJsonBody } from './body.js';

/**
 * The outbox over HTTP: enqueue (`POST /v1/operations`), read (`GET /v1/operations[/:ref]`,
 * paginated by `cursor`, filtered by `state`) and steer (`POST /v1/operations/:ref/retry|cancel`).
 * Refusals from steering (SteerError) are mapped to 404/409/400 by the server's error handler.
 */
export function registerOperationsRoutes(app: Hono, ctx: AppContext): void {
  app.post('/v1/operations', async (c) => {
    const input = await readJsonBody(c);
    const result = enqueueOperation(ctx, input);
    switch (result.status) {
      case 422:
        return c.json({ error: 'notification is invalid', errors: result.errors }, 422);
      case 409:
        return c.json({ error: result.message, entry: toEntry(result.row) }, 409);
      default:
        return c.json(toEntry(result.row), result.status);
    }
  });

  app.get('/v1/operations', (c) => {
    const limit = c.req.query('limit');
    return c.json(
      listOperations(ctx, {
        state: c.req.query('state'),
        cursor: c.req.query('cursor'),
        limit: limit === undefined ? undefined : Number(limit),
      }),
    );
  });

  app.get('/v1/operations/:ref', (c) => c.json(showOperation(ctx, c.req.param('ref'))));
  app.post('/v1/operations/:ref/retry', (c) => c.json(retryOperation(ctx, c.req.param('ref'))));
  app.post('/v1/operations/:ref/cancel', (c) => c.json(cancelOperation(ctx, c.req.param('ref'))));
}
