import type { Hono } from 'hono';
import { z } from 'zod';
import type { Config } from '../config/config.js';
import type { AppContext } from '../context.js';
import type { OutboxAccess } from '../outbox/access.js';
import { toEntry } from '../outbox/entry.js';
import { cancelOperation, listOperations, retryOperation, showOperation } from '../outbox/manage.js';
import type { WakeDispatcher } from '../outbox/prepareInsert.js';
import { notificationSchema } from '../outbox/validate.js';
import { readJsonBody } from './jsonBody.js';
import { cursorParam, limitParam, parseQuery, type RouteSpec } from './routeSpec.js';
import { fieldErrorsBody } from './schemas/common.js';
import { operationSchemas, outboxState } from './schemas/operations.js';

const listQuery = z.strictObject({
  state: outboxState.optional().describe('only rows in this state'),
  cursor: cursorParam,
  limit: limitParam,
});

const refParam = z.strictObject({ ref: z.string().min(1).describe('the marketplaceTransactionRef') });

/** The routes of this file, for /openapi.json: the entry's operationType depends on the configuration. */
export function operationsRouteSpecs(config: Pick<Config, 'outbox'>): RouteSpec[] {
  const { entry, page, conflict } = operationSchemas(config.outbox.wire_spelling);
  return [
    {
      method: 'post',
      path: '/v1/operations',
      operationId: 'queueOperation',
      summary: 'Queue a notification for /notify (idempotent on marketplaceTransactionRef)',
      body: notificationSchema,
      responses: {
        '201': { description: 'queued: the stored entry', schema: entry },
        '200': {
          description: 'the same ref with the same body was queued before: the stored entry',
          schema: entry,
        },
        '409': { description: 'the same ref holds another body; the stored entry', schema: conflict },
        '422': { description: 'every field problem', schema: fieldErrorsBody },
        '503': {
          description:
            'not stored: the database is locked by another process, full, read-only or damaged; retry after Retry-After',
          headers: { 'Retry-After': 'seconds to wait before retrying' },
        },
      },
    },
    {
      method: 'get',
      path: '/v1/operations',
      operationId: 'listOperations',
      summary: 'List queued operations, oldest first, paginated by cursor',
      query: listQuery,
      responses: { '200': { description: 'a page', schema: page } },
    },
    {
      method: 'get',
      path: '/v1/operations/{ref}',
      operationId: 'getOperation',
      summary: 'One operation with its attempts and decision (personal fields masked)',
      params: refParam,
      responses: {
        '200': { description: 'the entry, with attemptLog', schema: entry },
        '404': 'unknown ref',
      },
    },
    {
      method: 'post',
      path: '/v1/operations/{ref}/retry',
      operationId: 'retryOperation',
      summary: 'Move a failed operation back to queued (or make a queued one due now)',
      params: refParam,
      responses: {
        '200': { description: 'the entry', schema: entry },
        '404': 'unknown ref',
        '409': 'not in a retryable state',
      },
    },
    {
      method: 'post',
      path: '/v1/operations/{ref}/cancel',
      operationId: 'cancelOperation',
      summary: 'Cancel an operation not yet accepted by the operator',
      params: refParam,
      responses: {
        '200': { description: 'the entry', schema: entry },
        '404': 'unknown ref',
        '409': 'accepted already, or being sent right now',
      },
    },
  ];
}

/** Options of {@link registerOperationsRoutes}. */
export interface OperationsRouteOptions {
  /** The dispatcher's wake (when it runs in this process), called once a row may be due. */
  wake?: WakeDispatcher | undefined;
  /** Where the operations are kept (the store's; SQLite's enqueues in its group commit). */
  outbox: OutboxAccess;
}

/**
 * The outbox over HTTP: enqueue (`POST /v1/operations`), read (`GET /v1/operations[/:ref]`,
 * paginated by `cursor`, filtered by `state`) and steer (`POST /v1/operations/:ref/retry|cancel`),
 * the same answers on either store. Refusals from steering (SteerError) are mapped to 404/409/400
 * by the server's error handler.
 */
export function registerOperationsRoutes(
  app: Hono,
  _ctx: AppContext,
  { wake, outbox }: OperationsRouteOptions,
): void {
  app.post('/v1/operations', async (c) => {
    const input = await readJsonBody(c);
    const result = await outbox.enqueue(input, wake);
    switch (result.status) {
      case 422:
        return c.json({ error: 'notification is invalid', errors: result.errors }, 422);
      case 409:
        return c.json({ error: result.message, entry: toEntry(result.row) }, 409);
      default:
        return c.json(toEntry(result.row), result.status);
    }
  });

  app.get('/v1/operations', async (c) => c.json(await listOperations(outbox, parseQuery(c, listQuery))));

  app.get('/v1/operations/:ref', async (c) => c.json(await showOperation(outbox, c.req.param('ref'))));
  app.post('/v1/operations/:ref/retry', async (c) =>
    c.json(await retryOperation(outbox, c.req.param('ref'), wake)),
  );
  app.post('/v1/operations/:ref/cancel', async (c) =>
    c.json(await cancelOperation(outbox, c.req.param('ref'))),
  );
}
