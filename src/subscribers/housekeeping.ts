import { errorMessage } from '../common/errors.js';
import type { Logger } from '../common/log.js';
import type { Config } from '../config/config.js';
import type { DeliveriesPrune } from './prune.js';
import { subscriberKeys } from './subscribers.js';

/**
 * The deliveries' share of the hourly housekeeping: the prune (prune.ts) and its log.
 * The outbox dispatcher runs it after its scrub (outbox/hooks.ts ScrubSchedule), handed to it by
 * the root that wires the dispatcher, so the outbox never imports the subscribers.
 */

/**
 * The housekeeping job: prunes with the config's retention and subscribers, logs what it deleted
 * and the orphans it kept; a failure is logged (and tried again at the next run), never thrown.
 */
export function deliveriesHousekeeping(
  config: Pick<Config, 'subscriber_delivery' | 'subscribers'>,
  log: Logger,
  prune: DeliveriesPrune,
): (nowMs: number) => Promise<void> {
  const retentionDays = config.subscriber_delivery.retention_days;
  const configured = subscriberKeys(config);
  return (nowMs) =>
    prune(nowMs, retentionDays, configured).then(
      (r) => {
        const rows = r.delivered + r.dead + r.orphaned;
        if (rows > 0)
          log.info(
            { event: 'subscribers.pruned', delivered: r.delivered, dead: r.dead, orphaned: r.orphaned },
            `deleted ${rows} deliveries past subscriber_delivery.retention_days`,
          );
        if (r.orphans.length > 0)
          log.warn(
            { event: 'subscribers.orphaned', orphans: r.orphans },
            `unsent deliveries of subscribers no longer configured (${r.orphans.map((o) => o.subscriber).join(', ')}): kept for subscriber_delivery.retention_days, then deleted`,
          );
      },
      (err: unknown) => {
        log.error(
          { event: 'subscribers.prune.error', err },
          `could not prune old deliveries: ${errorMessage(err)}`,
        );
      },
    );
}
