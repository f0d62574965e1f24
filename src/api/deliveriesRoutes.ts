import type { Hono } from 'hono';
import { HTTPException } from 'hono/http-exception';
import { z } from 'zod';
import type { AppContext } from '../context.js';
import type { DeliveriesAccess } from '../subscribers/deliveriesStore.js';
import { listDeliveryEntries, redriveSince, retryDeliveryById } from '../subscribers/manage.js';
import { subscriberKeys } from '../subscribers/subscribers.js';
import { readJsonBody } from './jsonBody.js';
import { cursorParam, decimalParam, limitParam, parseQuery, type RouteSpec } from './routeSpec.js';
import {
  deliveryEntry,
  deliveryPage,
  deliveryState,
  redriveBody,
  redriveResult,
} from './schemas/deliveries.js';

const listQuery = z.strictObject({
  state: deliveryState.optional().describe('only rows in this state'),
  subscriber: z.string().min(1).optional().describe('only this subscriber'),
  cursor: cursorParam,
  limit: limitParam,
});

const idParam = z.strictObject({ id: decimalParam(1).describe('the delivery id') });

/** The routes of this file, for /openapi.json. */
export const DELIVERIES_ROUTE_SPECS: RouteSpec[] = [
  {
    method: 'get',
    path: '/v1/deliveries',
    operationId: 'listDeliveries',
    summary: 'List subscriber deliveries, oldest first, paginated by cursor',
    query: listQuery,
    responses: { '200': { description: 'a page', schema: deliveryPage } },
  },
  {
    method: 'post',
    path: '/v1/deliveries/{id}/retry',
    operationId: 'retryDelivery',
    summary: 'Send a dead delivery again (attempts reset), or make a waiting one due now',
    params: idParam,
    responses: {
      '200': { description: 'the delivery', schema: deliveryEntry },
      '404': 'unknown id',
      '409': 'delivered or being sent',
    },
  },
  {
    method: 'post',
    path: '/v1/deliveries/redrive',
    operationId: 'redriveDeliveries',
    summary: 'Send every delivery that went to the dead letter since a time again',
    body: redriveBody,
    responses: {
      '200': { description: 'what went back to pending', schema: redriveResult },
    },
  },
];

/**
 * Subscriber deliveries over HTTP, on the store's `access`; refusals (SteerError) are mapped by
 * the server's error handler.
 */
export function registerDeliveriesRoutes(app: Hono, ctx: AppContext, access: DeliveriesAccess): void {
  const configured = subscriberKeys(ctx.config);
  app.get('/v1/deliveries', async (c) => {
    const q = parseQuery(c, listQuery);
    const after = q.cursor === undefined ? undefined : Number(q.cursor);
    if (after !== undefined && !Number.isSafeInteger(after))
      throw new HTTPException(400, { message: 'cursor: expected the nextCursor of the previous page' });
    return c.json(
      await listDeliveryEntries(access, {
        state: q.state,
        subscriber: q.subscriber,
        after,
        limit: q.limit,
        configured,
      }),
    );
  });
  app.post('/v1/deliveries/redrive', async (c) => {
    const parsed = redriveBody.safeParse(await readJsonBody(c));
    if (!parsed.success)
      throw new HTTPException(400, {
        message: 'expected { "since": ISO time or duration, "subscriber"?: name }',
      });
    return c.json(await redriveSince(access, ctx.clock, parsed.data.since, parsed.data.subscriber));
  });
  app.post('/v1/deliveries/:id/retry', async (c) => {
    const id = idParam.safeParse({ id: c.req.param('id') });
    if (!id.success) throw new HTTPException(400, { message: 'id: expected a delivery id' });
    return c.json(await retryDeliveryById(access, ctx.clock, id.data.id, configured));
  });
}
