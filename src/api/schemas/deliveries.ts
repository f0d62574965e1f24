import { z } from 'zod';
import { SUBSCRIBER_EVENTS } from '../../config/configSchema.js';
import { DELIVERY_STATES } from '../../subscribers/queries.js';
import { instant } from './common.js';

/** The answers of `/v1/deliveries`: subscriber deliveries (src/subscribers/manage.ts). */

export const deliveryState = z.enum(DELIVERY_STATES).meta({ id: 'DeliveryState' });

export const deliveryEntry = z
  .object({
    id: z.number().int(),
    subscriber: z.string().describe('the subscriber name, or sub_ and a hash of its URL'),
    type: z.enum(SUBSCRIBER_EVENTS),
    marketplaceTransactionRef: z.string(),
    webhookId: z.string().describe('webhook-id, the same on every attempt'),
    state: deliveryState,
    attempts: z.number().int(),
    nextAttemptAt: instant,
    lastStatus: z.number().int().nullable(),
    lastError: z.string().nullable(),
    createdAt: instant,
    deliveredAt: instant.nullable(),
    deadAt: instant.nullable(),
    orphaned: z
      .boolean()
      .describe(
        'its subscriber is not in the config (renamed or removed): nothing sends it; deleted subscriber_delivery.retention_days after it was written',
      ),
  })
  .meta({ id: 'Delivery' });

export const deliveryPage = z
  .object({
    items: z.array(deliveryEntry),
    nextCursor: z.string().nullable().describe('pass as `cursor` for the next page; null at the end'),
  })
  .meta({ id: 'DeliveryPage' });

export const redriveBody = z
  .strictObject({
    since: z.string().min(1).describe('dead since this ISO time, or a duration back from now: 30m, 2h, 3d'),
    subscriber: z.string().min(1).optional().describe('only this subscriber'),
  })
  .meta({ id: 'RedriveRequest' });

export const redriveResult = z
  .object({
    since: instant,
    redriven: z.number().int(),
    ids: z.array(z.number().int()),
  })
  .meta({ id: 'RedriveResult' });
