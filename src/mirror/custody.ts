import { isoAt } from '../clock.js';
import type { AppContext } from '../context.js';
import { UnreadableRecord } from '../operator/limits.js';
import { bookkeeping, type RunCounts, withTally } from './bookkeeping.js';
import { RunAborted } from './errors.js';
import { custodyPath, custodyResources } from './resources.js';
import { readRetry } from './retry.js';
import { logQuarantined } from './scan/heldWrites.js';
import { sqliteStore } from './store.js';

/** What a custody run needs besides the context. */
export interface CustodySyncOptions {
  runId: number;
  counts: RunCounts;
  /** How retries wait (default: setTimeout). */
  sleep?: (ms: number) => Promise<void>;
  /** Stops the run between reads (default: none). */
  signal?: AbortSignal;
  /** Called after each read (default: none). */
  onProgress?: (counts: RunCounts) => void;
}

/** Ids named by an outbox Tokenization body: its unitId and issuanceId (pure). */
export function idsFromTokenization(body: string): { units?: string; issuances?: string } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return {};
  }
  if (!parsed || typeof parsed !== 'object') return {};
  const o = parsed as Record<string, unknown>;
  const text = (v: unknown) =>
    typeof v === 'number' || (typeof v === 'string' && v.trim() !== '') ? String(v) : undefined;
  const out: { units?: string; issuances?: string } = {};
  const unit = text(o.unitId);
  const issuance = text(o.issuanceId);
  if (unit !== undefined) out.units = unit;
  if (issuance !== undefined) out.issuances = issuance;
  return out;
}

/** Adds the ids from the configuration and from accepted Tokenizations to `custody_ids`. */
export function collectCustodyIds(ctx: AppContext): void {
  const book = bookkeeping(ctx.database.sqlite);
  const at = isoAt(ctx.clock.now());
  const writeTx = ctx.database.sqlite.transaction(() => {
    for (const kind of ['projects', 'issuances', 'units'] as const) {
      for (const id of ctx.config.custody[kind]) book.addCustodyId(kind, id, 'config', at);
    }
    for (const body of book.tokenizationBodies(ctx.config.outbox.wire_spelling.tokenization)) {
      const ids = idsFromTokenization(body);
      if (ids.units) book.addCustodyId('units', ids.units, 'outbox', at);
      if (ids.issuances) book.addCustodyId('issuances', ids.issuances, 'outbox', at);
    }
  });
  // IMMEDIATE: the write lock first; a deferred read-then-write fails at once on another connection's lock.
  writeTx.immediate();
}

/**
 * Reads the Marketplace Data of every id in custody, with the list scan's retry and batch writes
 * (a batch of one record, no checkpoint). A 404 ends that id's custody (the row is kept,
 * `_custody_ended_at` set, a `remove` change fed); it does not fail the run.
 */
export async function syncCustody(ctx: AppContext, options: CustodySyncOptions): Promise<void> {
  const { sqlite } = ctx.database;
  const { counts, runId } = options;
  const now = () => isoAt(ctx.clock.now());
  collectCustodyIds(ctx);
  for (const resource of custodyResources(ctx.config)) {
    const store = sqliteStore(sqlite, resource, now);
    for (const id of bookkeeping(sqlite).custodyIds(resource.kind)) {
      if (options.signal?.aborted) throw new RunAborted();
      const retry = readRetry(ctx, options, 'custody read failed; retrying', {
        resource: 'custody',
        table: resource.table,
        id,
      });
      const value = await retry.run(() =>
        ctx.operator().getOne(resource.operation, custodyPath(resource, id), { signal: options.signal }),
      );
      counts.pages++;
      if (value === null) {
        if (await store.endCustody(runId, resource.kind, id, counts)) counts.removed++;
        ctx.log.info(
          { event: 'sync.custody.ended', resource: 'custody', table: resource.table, id },
          'no longer in custody (404)',
        );
      } else {
        counts.fetched++;
        // Too large or too deep to read: quarantined under the id it was read by.
        const record = value instanceof UnreadableRecord ? value.withKey(id) : value;
        const result = await store.commitBatch({
          runId,
          records: [{ value: record, position: null }],
          trackSeen: false,
          checkpoint: null,
          counts,
        });
        Object.assign(counts, withTally(counts, result.tally));
        logQuarantined(ctx, 'custody', resource.table, result);
      }
      options.onProgress?.(counts);
    }
  }
}
