import { createHash } from 'node:crypto';
import type { Config } from '../config/config.js';
import type { SchemaChangeSink } from '../mirror/shape/tracker.js';
import type { StateChangeSink } from '../operations/effects.js';
import type { FindingSink } from '../reconcile/pass.js';
import { deliveriesSink, findingsSink, schemaChangesSink } from './deliverySinks.js';
import type { Subscriber } from './events.js';

/** Who gets operation events pushed (`[[subscribers]]`), as the daemon uses them. */

export { eventFor, type Subscriber, type SubscriberEvent } from './events.js';

/** A subscriber's key: its name, else a short hash of its URL (the URL may hold a token). */
export function subscriberKey(sub: { name?: string | undefined; url: string }): string {
  return sub.name ?? `sub_${createHash('sha256').update(sub.url).digest('hex').slice(0, 12)}`;
}

/** The configured subscribers (the config loader has read every secret_file into secret). */
export function subscribersFromConfig(config: Pick<Config, 'subscribers'>): Subscriber[] {
  return config.subscribers.map((s) => ({
    key: subscriberKey(s),
    url: s.url,
    secret: s.secret ?? '',
    events: s.events,
  }));
}

/** The configured subscribers' keys: any other's deliveries are orphaned (see prune.ts). */
export function subscriberKeys(config: Pick<Config, 'subscribers'>): string[] {
  return subscribersFromConfig(config).map((sub) => sub.key);
}

/**
 * The sink a root hands the stores (and each worker thread that changes operations): the
 * configured subscribers' deliveries, written with every state change; none when nobody subscribes.
 */
export function configuredDeliveriesSink(config: Pick<Config, 'subscribers'>): StateChangeSink | undefined {
  return deliveriesSink(subscribersFromConfig(config));
}

/** The sink a root hands the mirror: `schema.changed` deliveries for the subscribers that ask for them. */
export function configuredSchemaChangesSink(
  config: Pick<Config, 'subscribers'>,
): SchemaChangeSink | undefined {
  return schemaChangesSink(subscribersFromConfig(config));
}

/** The sink a root hands the reconciler: findings opened and resolved, for the subscribers that ask for them. */
export function configuredFindingsSink(config: Pick<Config, 'subscribers'>): FindingSink | undefined {
  return findingsSink(subscribersFromConfig(config));
}
