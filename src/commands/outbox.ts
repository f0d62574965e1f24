import { SteerError } from '../common/errors.js';
import type { OutboxAccess } from '../outbox/access.js';
import type { OutboxEntry } from '../outbox/entry.js';
import { cancelOperation, listOperations, retryOperation, showOperation } from '../outbox/manage.js';
import { type CommandStreams, commandOutput } from './commandOutput.js';
import { type Column, listText } from './textTable.js';

/** Options of `vcu-sync outbox`. */
export interface OutboxCommandOptions extends CommandStreams {
  /** Print JSON instead of a table (default: false; show/retry/cancel always print JSON). */
  json?: boolean;
  /** list: only rows in this state (default: all). */
  state?: string | undefined;
  /** list: rows per page (default: 100). */
  limit?: number | undefined;
  /** list: the nextCursor of the previous page (default: from the start). */
  cursor?: string | undefined;
}

const COLUMNS: ReadonlyArray<Column<keyof OutboxEntry & string>> = [
  ['ID', 'id'],
  ['REF', 'marketplaceTransactionRef'],
  ['TYPE', 'operationType'],
  ['STATE', 'state'],
  ['ATTEMPTS', 'attempts'],
  ['NEXT_ATTEMPT', 'next_attempt_at'],
  ['LAST_ERROR', 'last_error'],
];

/**
 * `vcu-sync outbox list|show REF|retry REF|cancel REF [--json]`. Personal fields are masked.
 * Exit 0 done, 1 refused (e.g. cancel after acceptance; the reason is printed), 3 no such ref,
 * 64 usage error.
 */
export async function runOutboxCommand(
  outbox: OutboxAccess,
  sub: string,
  ref: string | undefined,
  opts: OutboxCommandOptions = {},
): Promise<number> {
  const { stdout, stderr, printJson: print } = commandOutput(opts);
  try {
    if (sub === 'list') {
      const page = await listOperations(outbox, {
        state: opts.state,
        limit: opts.limit,
        cursor: opts.cursor,
      });
      if (opts.json) print(page);
      else stdout.write(listText(COLUMNS, page));
      return 0;
    }
    if (sub !== 'show' && sub !== 'retry' && sub !== 'cancel') {
      stderr.write(`vcu-sync: outbox: unknown action ${sub}; expected list, show, retry or cancel\n`);
      return 64;
    }
    if (!ref) {
      stderr.write(`vcu-sync: outbox ${sub}: a marketplaceTransactionRef is required\n`);
      return 64;
    }
    const action = { show: showOperation, retry: retryOperation, cancel: cancelOperation }[sub];
    print(await action(outbox, ref));
    return 0;
  } catch (err) {
    if (err instanceof SteerError) {
      stderr.write(`vcu-sync: ${err.message}\n`);
      return err.code === 'invalid' ? 64 : err.exitCode;
    }
    throw err;
  }
}
