import { SUBSCRIBER_EVENTS } from '../config/configSchema.js';
import type { OperationState } from '../operations/states.js';

/** What a subscriber is and which events there are (subscribers.ts re-exports them). */

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
