import { z } from 'zod';
import { httpUrl, positiveInt } from './configPrimitives.js';

/** `[[subscribers]]` and `[subscriber_delivery]`: signed webhooks of operation events to internal apps. */

/**
 * The events a subscriber may ask for: the operation's states that interest internal apps, the
 * operator's records changing shape, and the reconciliation's findings opened and resolved.
 */
export const SUBSCRIBER_EVENTS = [
  'operation.accepted',
  'operation.approved',
  'operation.rejected',
  'operation.failed',
  'operation.cancelled',
  'schema.changed',
  'reconciliation.finding',
  'reconciliation.resolved',
] as const;

/**
 * What a subscriber gets unless it names its events: every operation event (not `schema.changed`
 * nor `reconciliation.*`, asked for by name).
 */
export const DEFAULT_SUBSCRIBER_EVENTS = SUBSCRIBER_EVENTS.filter((e) => e.startsWith('operation.'));

export const subscriberSchema = z
  .strictObject({
    /** The subscriber's name in deliveries, status and metrics (default: "sub_" and a hash of the URL). */
    name: z
      .string()
      .regex(/^[A-Za-z0-9._-]{1,64}$/, 'expected 1 to 64 letters, digits, ".", "_" or "-"')
      .optional(),
    /** Where events are POSTed, http(s) (default: none; required). */
    url: httpUrl,
    /** Standard Webhooks signing secret, `whsec_<base64>` (default: none; this or secret_file). */
    secret: z.string().min(1).optional(),
    /** File holding the signing secret (default: none; this or secret). */
    secret_file: z.string().min(1).optional(),
    /** Events sent: operation.*, schema.changed, reconciliation.finding and reconciliation.resolved (default: every operation.* event). */
    events: z
      .array(z.enum(SUBSCRIBER_EVENTS))
      .min(1)
      .default([...DEFAULT_SUBSCRIBER_EVENTS]),
  })
  .refine((s) => (s.secret === undefined) !== (s.secret_file === undefined), {
    message: 'set exactly one of secret and secret_file',
  });

export const subscriberDeliverySchema = z.strictObject({
  /** Attempts before a delivery is dead-lettered; with the default backoff 100 span about 6 hours, so an outage of an hour loses nothing (default: 100). */
  max_attempts: positiveInt.default(100),
  /** Age after which an undelivered delivery is dead-lettered, in hours (default: 72). */
  max_age_hours: z.number().positive().default(72),
  /** First retry delay in milliseconds, doubled each attempt, with jitter (default: 1000). */
  backoff_base_ms: positiveInt.default(1_000),
  /** Longest retry delay in milliseconds (default: 300000). */
  backoff_cap_ms: positiveInt.default(300_000),
  /** Whole-request timeout in milliseconds (default: 10000). */
  timeout_ms: positiveInt.default(10_000),
  /** Timeout to connect, in milliseconds (default: 5000). */
  connect_timeout_ms: positiveInt.default(5_000),
  /** How long a claimed delivery is held before another claim may take it, in seconds (default: 60). */
  lease_seconds: positiveInt.default(60),
  /** How often the subscriber dispatcher looks for due deliveries when idle, in milliseconds (default: 500). */
  poll_ms: positiveInt.default(500),
  /**
   * Days a delivered or dead delivery is kept after it ended, and a pending one of a subscriber no
   * longer configured after it was written; then it is deleted, hourly with the outbox's scrub (default: 30).
   */
  retention_days: z.number().positive().default(30),
  /** The oldest undelivered delivery of a subscriber older than this is a warning, in minutes (default: 15). */
  failing_warn_minutes: z.number().positive().default(15),
});
