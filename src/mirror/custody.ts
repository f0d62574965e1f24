import { isoAt } from '../clock.js';
import type { AppContext } from '../context.js';
import { UnreadableRecord } from '../operator/limits.js';
import { RunAborted } from './listSync.js';
import type { RunCounts } from './queries.js';
import { syncQueries } from './queries.js';
import { custodyPath, custodyResources } from './resources.js';
import { realSleep, withRetry } from './retry.js';
import { tableQueries } from './tableQueries.js';
import { RecordWriter } from './writer.js';

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
  const sync = syncQueries(ctx.database.sqlite);
  const at = isoAt(ctx.clock.now());
  const writeTx = ctx.database.sqlite.transaction(() => {
    for (const kind of ['projects', 'issuances', 'units'] as const) {
      for (const id of ctx.config.custody[kind]) sync.addCustodyId(kind, id, 'config', at);
    }
    for (const body of sync.tokenizationBodies(ctx.config.outbox.wire_spelling.tokenization)) {
      const ids = idsFromTokenization(body);
      if (ids.units) sync.addCustodyId('units', ids.units, 'outbox', at);
      if (ids.issuances) sync.addCustodyId('issuances', ids.issuances, 'outbox', at);
    }
  });
  // IMMEDIATE: the write lock first; a deferred read-then-write fails at once on another connection's lock.
  writeTx.immediate();
}

/**
 * Reads the Marketplace Data of every id in custody. A 404 ends that id's custody (the row is
 * kept, `_custody_ended_at` set, a `remove` change fed); it does not fail the run.
 */
export async function syncCustody(ctx: AppContext, options: CustodySyncOptions): Promise<void> {
  const { sqlite } = ctx.database;
  const sync = syncQueries(sqlite);
  collectCustodyIds(ctx);
  for (const resource of custodyResources(ctx.config)) {
    const table = tableQueries(sqlite, resource);
    const writer = new RecordWriter(table, sync, {
      runId: options.runId,
      trackSeen: false,
      counts: options.counts,
      onQuarantine: (key, reason) =>
        ctx.log.warn(
          { event: 'sync.record.quarantined', resource: resource.table, key, reason },
          'record quarantined',
        ),
    });
    for (const id of sync.custodyIds(resource.kind)) {
      if (options.signal?.aborted) throw new RunAborted();
      const value = await withRetry(
        () =>
          ctx.operator().getOne(resource.operation, custodyPath(resource, id), { signal: options.signal }),
        {
          attempts: ctx.config.sync.page_attempts,
          capMs: ctx.config.sync.retry_cap_ms,
          sleep: options.sleep ?? realSleep,
          signal: options.signal,
          onRetry: (err, attempt, waitMs) =>
            ctx.log.warn(
              {
                event: 'sync.page.retry',
                resource: resource.table,
                id,
                attempt,
                waitMs,
                kind: err.kind,
                error: err.message,
              },
              'custody read failed; retrying',
            ),
        },
      );
      options.counts.pages++;
      const writeTx = sqlite.transaction(() => {
        const at = isoAt(ctx.clock.now());
        if (value === null) {
          sync.endCustodyId(resource.kind, id, at);
          if (table.endCustody(id, at)) {
            sync.addChange(resource.table, id, 'remove', at);
            options.counts.removed++;
          }
          ctx.log.info(
            { event: 'sync.custody.ended', resource: resource.table, id },
            'no longer in custody (404)',
          );
        } else {
          options.counts.fetched++;
          // Too large or too deep to read: quarantined under the id it was read by.
          const record = value instanceof UnreadableRecord ? value.withKey(id) : value;
          writer.apply({ value: record, position: null }, at);
        }
        sync.progress(options.runId, options.counts);
      });
      // IMMEDIATE: the write lock first; a deferred read-then-write fails at once on another connection's lock.
      writeTx.immediate();
      options.onProgress?.(options.counts);
    }
  }
}
