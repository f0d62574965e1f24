import { createHash } from 'node:crypto';
import type { Config } from '../config.js';
import { SUBSCRIBER_EVENTS } from '../configSchema.js';
import type { Sqlite } from '../db/open.js';
import type { OperationState } from '../operations/states.js';

/** Who gets operation events pushed (`[[subscribers]]`), as the daemon uses them. */

export type SubscriberEvent = (typeof SUBSCRIBER_EVENTS)[number];

/** One subscriber, resolved: its stable key, where it is, how events are signed, which it wants. */
export interface Subscriber {
  /** The `name`, or `sub_` and a hash of the URL: stable across restarts, never the URL itself. */
  key: string;
  url: string;
  /** `whsec_...`; registered for redaction when the config was loaded. */
  secret: string;
  events: readonly SubscriberEvent[];
}

/** The event a state change raises, if any (queued and sending concern nobody outside). */
export function eventFor(state: OperationState): SubscriberEvent | undefined {
  const event = `operation.${state}`;
  return (SUBSCRIBER_EVENTS as readonly string[]).includes(event) ? (event as SubscriberEvent) : undefined;
}

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

const registered = new WeakMap<Sqlite, readonly Subscriber[]>();

/**
 * Tells the database handle who subscribes, so every state change committed through it writes
 * their deliveries (see enqueue.ts). Set when the context opens the database, in every process
 * that may change an operation (daemon, CLI), so a cancel from the CLI is pushed too.
 */
export function useSubscribers(sqlite: Sqlite, subscribers: readonly Subscriber[]): void {
  registered.set(sqlite, subscribers);
}

/** The subscribers registered on a handle (none unless {@link useSubscribers} was called). */
export function subscribersOf(sqlite: Sqlite): readonly Subscriber[] {
  return registered.get(sqlite) ?? [];
}
