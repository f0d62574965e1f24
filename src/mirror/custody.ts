import { isoAt } from '../common/clock.js';
import { inByteOrder } from '../common/textForms.js';
import type { AppContext } from '../context.js';
import { UnreadableRecord } from '../operator/limits.js';
import { recordKey } from '../operator/schemas.js';
import { all, run, type Script } from '../store/script.js';
import { type RunCounts, withTally } from './bookkeeping.js';
import { custodyPath, custodyResources, type TableDef } from './resources.js';
import { readRetry } from './retry.js';
import { logQuarantined } from './scan/heldWrites.js';
import { logSchemaChanges } from './shape/shapeLog.js';
import { activeCustodyIds, addCustodyIds, tokenizationBodies } from './statements.js';
import { type MirrorDb, type MirrorStore, statementGroups } from './store.js';
import { RunAborted } from './syncErrors.js';

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
  /** The run's database: `custody_ids` is on the one that holds the outbox its ids come from. */
  db: MirrorDb;
  /** The store of a custody table on the run's database (its writes fenced by the run's lease). */
  store: (def: TableDef) => MirrorStore;
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

/** A row for `custody_ids`: an id and where it came from. */
export interface CustodyIdAdd {
  kind: 'projects' | 'issuances' | 'units';
  id: string;
  source: 'config' | 'outbox';
}

/**
 * The ids the configuration and accepted Tokenizations (`bodies`) put in custody, each once, the
 * configuration's first: an id named by both keeps `config` as its source (pure).
 */
export function custodyIdsToAdd(
  custody: AppContext['config']['custody'],
  bodies: readonly string[],
): CustodyIdAdd[] {
  const out: CustodyIdAdd[] = [];
  const taken = new Set<string>();
  const add = (kind: CustodyIdAdd['kind'], id: string, source: CustodyIdAdd['source']) => {
    const key = `${kind}\0${id}`;
    if (taken.has(key)) return;
    taken.add(key);
    out.push({ kind, id, source });
  };
  for (const kind of ['projects', 'issuances', 'units'] as const) {
    for (const id of custody[kind]) add(kind, id, 'config');
  }
  for (const body of bodies) {
    const ids = idsFromTokenization(body);
    if (ids.units) add('units', ids.units, 'outbox');
    if (ids.issuances) add('issuances', ids.issuances, 'outbox');
  }
  return out;
}

/** Oldest first, then by id bytewise (as SQLite's BINARY collation orders them) (pure). */
export function custodyOrder(
  a: { id: string; added_at: string },
  b: { id: string; added_at: string },
): number {
  if (a.added_at !== b.added_at) return a.added_at < b.added_at ? -1 : 1;
  return inByteOrder(a.id, b.id);
}

/**
 * In one transaction: reads the bodies of accepted Tokenizations (`wireSpelling` or
 * "Tokenization") and adds `toAdd(bodies)` to `custody_ids`, all at `at` (an id already there is
 * left as it is).
 */
function* collectIds(
  db: MirrorDb,
  wireSpelling: string,
  toAdd: (bodies: string[]) => CustodyIdAdd[],
  at: string,
): Script<void> {
  const bodies = yield* all<{ body: string }>(tokenizationBodies(wireSpelling));
  const adds = toAdd(bodies.map((r) => r.body));
  for (const group of statementGroups(adds, 4, db.preparesStatements))
    yield* run(addCustodyIds(at, group, db.rowsSource));
}

/** The ids of `kind` still in custody, oldest first, then by id (bytewise). */
async function activeIds(db: MirrorDb, kind: string): Promise<string[]> {
  const rows = await db.read<{ id: string; added_at: string }>(activeCustodyIds(kind));
  return rows.sort(custodyOrder).map((r) => r.id);
}

/**
 * Reads the Marketplace Data of every id in custody, with the list scan's retry and batch writes
 * (a batch of one record, no checkpoint). A 404 ends that id's custody (the row is kept,
 * `_custody_ended_at` set, a `remove` change fed); it does not fail the run.
 */
export async function syncCustody(ctx: AppContext, options: CustodySyncOptions): Promise<void> {
  const { counts, runId, db } = options;
  // Ending an id's custody is the mirror store's (`endCustody`), with its record's tombstone.
  await db.transaction(
    collectIds(
      db,
      ctx.config.outbox.wire_spelling.tokenization,
      (bodies) => custodyIdsToAdd(ctx.config.custody, bodies),
      isoAt(ctx.clock.now()),
    ),
  );
  const scanStartedAt = isoAt(ctx.clock.now());
  for (const resource of custodyResources(ctx.config)) {
    const store = options.store(resource);
    const reapplied = await store.reapplyQuarantined(runId, counts);
    if (reapplied) {
      Object.assign(counts, withTally(counts, reapplied.tally));
      logQuarantined(ctx, 'custody', resource.table, reapplied);
    }
    for (const id of await activeIds(db, resource.kind)) {
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
        // Answered under another key (the operator changed its keys' format): the record lives on
        // under that key, so the row of the id asked for is no longer the operator's; the id is
        // still held and read.
        const key = recordKey(record, resource.key);
        if (key !== null && key !== id && (await store.endCustody(runId, resource.kind, id, counts, true)))
          counts.removed++;
      }
      options.onProgress?.(counts);
    }
    // Every id in custody was read: a field none of them had is gone.
    logSchemaChanges(ctx.log, await store.completeShape(runId, scanStartedAt));
  }
}
