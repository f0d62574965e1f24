import { SteerError } from '../common/errors.js';
import type { Config } from '../config/config.js';
import type { AppContext } from '../context.js';
import type { DeliveriesAccess } from '../subscribers/deliveriesStore.js';
import {
  type DeliveryEntry,
  listDeliveryEntries,
  redriveSince,
  retryDeliveryById,
} from '../subscribers/manage.js';
import { subscriberKeys } from '../subscribers/subscribers.js';
import { type CommandStreams, commandOutput } from './commandOutput.js';
import { type Column, listText } from './textTable.js';
import { withStores } from './withStores.js';

/** Options of `vcu-sync deliveries`. */
export interface DeliveriesCommandOptions extends CommandStreams {
  json?: boolean;
  state?: string | undefined;
  subscriber?: string | undefined;
  since?: string | undefined;
  /** list: rows per page, 1 to 1000 (default: 100). */
  limit?: number | undefined;
  /** list: the nextCursor of the previous page (default: from the start). */
  cursor?: string | undefined;
}

const COLUMNS: ReadonlyArray<Column<keyof DeliveryEntry & string>> = [
  ['ID', 'id'],
  ['SUBSCRIBER', 'subscriber'],
  ['EVENT', 'type'],
  ['REF', 'marketplaceTransactionRef'],
  ['STATE', 'state'],
  ['ORPHANED', 'orphaned'],
  ['ATTEMPTS', 'attempts'],
  ['NEXT_ATTEMPT', 'nextAttemptAt'],
  ['LAST_ERROR', 'lastError'],
];

/**
 * `vcu-sync deliveries list|retry ID|redrive --since ISO|DURATION [--subscriber NAME]`.
 * Exit 0 done, 1 refused (retry of a delivered row), 3 no such delivery, 64 usage error.
 */
export async function runDeliveriesCommand(
  ctx: AppContext,
  access: DeliveriesAccess,
  action: string,
  id: string | undefined,
  opts: DeliveriesCommandOptions = {},
): Promise<number> {
  const { stdout, stderr, printJson: print } = commandOutput(opts);
  try {
    if (action === 'list') {
      if (opts.cursor !== undefined && !/^\d{1,15}$/.test(opts.cursor))
        throw new SteerError('invalid', 'deliveries list: --cursor must be a nextCursor value');
      const page = await listDeliveryEntries(access, {
        state: opts.state,
        subscriber: opts.subscriber,
        configured: subscriberKeys(ctx.config),
        after: opts.cursor === undefined ? undefined : Number(opts.cursor),
        limit: opts.limit,
      });
      if (opts.json) print(page);
      else stdout.write(listText(COLUMNS, page));
      return 0;
    }
    if (action === 'retry') {
      if (!id || !/^\d+$/.test(id))
        throw new SteerError('invalid', 'deliveries retry: a delivery id is required');
      print(await retryDeliveryById(access, ctx.clock, Number(id), subscriberKeys(ctx.config)));
      return 0;
    }
    if (action === 'redrive') {
      if (!opts.since)
        throw new SteerError('invalid', 'deliveries redrive: --since ISO|DURATION is required');
      print(await redriveSince(access, ctx.clock, opts.since, opts.subscriber));
      return 0;
    }
    throw new SteerError('invalid', `deliveries: unknown action ${action}; expected list, retry or redrive`);
  } catch (err) {
    if (err instanceof SteerError) {
      stderr.write(`vcu-sync: ${err.message}\n`);
      return err.code === 'invalid' ? 64 : err.exitCode;
    }
    throw err;
  }
}

/** The CLI's entry: the database must exist already. */
export function runDeliveriesCli(
  config: Config,
  action: string,
  id: string | undefined,
  options: DeliveriesCommandOptions,
): Promise<number> {
  return withStores(config, (ctx, stores) =>
    runDeliveriesCommand(ctx, stores.deliveriesAccess, action, id, options),
  );
}
