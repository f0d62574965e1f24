import type { Hono } from 'hono';
import { z } from 'zod';
import type { AppContext } from '../context.js';
import { OPERATION_STATES } from '../operations/states.js';
import { enqueueOperationGrouped, type WakeDispatcher } from '../outbox/enqueue.js';
import { toEntry } from '../outbox/entry.js';
import { cancelOperation, listOperations, retryOperation, showOperation } from '../outbox/manage.js';
import { notificationSchema } from '../outbox/validate.js';
import { readJsonBody } from './body.js';
import { cursorParam, limitParam, parseQuery, type RouteSpec } from './routeSpec.js';

const listQuery = z.strictObject({
  state: z.enum(OPERATION_STATES).optional().describe('only rows in this state'),
  cursor: cursorParam,
  limit: limitParam,
});

/** The routes of this file, for /openapi.json. */
export const OPERATIONS_ROUTE_SPECS: RouteSpec[] = [
  {
    method: 'post',
    path: '/v1/operations',
    summary: 'Queue a notification for /notify (idempotent on marketplaceTransactionRef)',
    body: notificationSchema,
    responses: {
      '201': 'queued: the stored entry',
      '200': 'the same ref with the same body was queued before: the stored entry',
      '409': 'the same ref holds another body',
      '422': '{ error, errors: [{ field, reason }] } — every field problem',
      '400': 'not JSON',
      '401': 'no token',
      '503':
        'not stored: the database is locked by another process, full, read-only or damaged; retry after Retry-After',
    },
  },
  {
    method: 'get',
    path: '/v1/operations',
    summary: 'List queued operations, oldest first, paginated by cursor',
    query: listQuery,
    responses: { '200': '{ items, nextCursor }', '400': 'a bad filter', '401': 'no token' },
  },
  {
    method: 'get',
    path: '/v1/operations/{ref}',
    summary: 'One operation with its attempts (personal fields masked)',
    responses: { '200': 'the entry', '404': 'unknown ref' },
  },
  {
    method: 'post',
    path: '/v1/operations/{ref}/retry',
    summary: 'Move a failed operation back to queued (or make a queued one due now)',
    responses: { '200': 'the entry', '404': 'unknown ref', '409': 'not in a retryable state' },
  },
  {
    method: 'post',
    path: '/v1/operations/{ref}/cancel',
    summary: 'Cancel an operation not yet accepted by the operator',
    responses: {
      '200': 'the entry',
      '404': 'unknown ref',
      '409': 'accepted already, or being sent right now',
    },
  },
];

/**
 * The outbox over HTTP: enqueue (`POST /v1/operations`), read (`GET /v1/operations[/:ref]`,
 * paginated by `cursor`, filtered by `state`) and steer (`POST /v1/operations/:ref/retry|cancel`).
 * Refusals from steering (SteerError) are mapped to 404/409/400 by the server's error handler.
 * `wake` (the dispatcher's, when it runs in this process) is called once a row may be due.
 */
export function registerOperationsRoutes(app: Hono, ctx: AppContext, wake?: WakeDispatcher): void {
  app.post('/v1/operations', async (c) => {
    const input = await readJsonBody(c);
    // Grouped: at hundreds of requests a second, one fsync per event-loop turn instead of one per request.
    const result = await enqueueOperationGrouped(ctx, input, wake);
    switch (result.status) {
      case 422:
        return c.json({ error: 'notification is invalid', errors: result.errors }, 422);
      case 409:
        return c.json({ error: result.message, entry: toEntry(result.row) }, 409);
      default:
        return c.json(toEntry(result.row), result.status);
    }
  });

  app.get('/v1/operations', (c) => c.json(listOperations(ctx, parseQuery(c, listQuery))));

  app.get('/v1/operations/:ref', (c) => c.json(showOperation(ctx, c.req.param('ref'))));
  app.post('/v1/operations/:ref/retry', (c) => c.json(retryOperation(ctx, c.req.param('ref'), wake)));
  app.post('/v1/operations/:ref/cancel', (c) => c.json(cancelOperation(ctx, c.req.param('ref'))));
}
