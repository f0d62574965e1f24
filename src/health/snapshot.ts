import { z } from 'zod';
import type { StoreIdentity } from './identity.js';
import type { Series } from './series.js';

/**
 * Every fact health is judged on, read from the database in one short read transaction, so the
 * daemon, `vcu-sync status` in another process, and the metrics all judge the same numbers. The
 * statements are ./snapshotReads.ts's, written once for both stores. The facts are declared once,
 * as the zod schema GET /status documents (./health.ts); the types are read from it.
 */

/** An ISO 8601 instant (UTC, milliseconds), as api/schemas/common.ts's. */
const instant = z.string().meta({ format: 'date-time' });
const count = z.number().int();
const when = instant.nullable();
const byName = z.record(z.string(), count);

const resourceFacts = z.object({
  resource: z.string(),
  lastSuccessAt: when,
  lastRun: z
    .object({
      id: count,
      status: z.string().describe('running, succeeded, failed or interrupted'),
      startedAt: instant,
      finishedAt: when,
      error: z.string().nullable(),
      fetched: count,
      inserted: count,
      updated: count,
      removed: count,
      quarantined: count,
    })
    .nullable(),
  records: count.describe('records in the mirror table, not removed'),
  effectivePageSize: count
    .nullable()
    .describe(
      'public lists: the limit their scans ask for (below sync.page_size when the operator caps it); null for custody',
    ),
});

/** The faults health reports (ISO times): what the store saw of its own health. */
const databaseFacts = z.object({
  writeFailure: z
    .object({ code: z.string(), message: z.string(), since: instant, lastAt: instant, failures: count })
    .nullable()
    .describe('the last write that failed for a reason other than a lock, while none has succeeded since'),
  lockedSince: when.describe('since when writes have found the write lock held by another process'),
  corruption: z
    .object({ detail: z.string(), at: instant, source: z.enum(['integrity-check', 'query']) })
    .nullable()
    .describe('corruption found by the integrity check or a query; writes are refused until a restart'),
  readError: z.string().nullable().describe('why health could not read the database, when it could not'),
  // A server store only: it could not be reached at all (refused, shut down, cut), since when as this
  // process saw it (null: unknown), why, and what to do (the store's own words).
  unreachable: z
    .object({ reason: z.string(), since: instant.nullable(), action: z.string().optional() })
    .nullable()
    .optional(),
  /** What to do about readError, when the store has its own advice (PostgreSQL: login, database, server). */
  readAction: z.string().optional(),
});

const subscriberBacklog = z.object({
  subscriber: z.string(),
  pending: count,
  dead: count,
  delivered: count,
  oldestPendingAt: when.describe('created_at (or redriven_at) of the oldest pending/sending row'),
  lastError: z.string().nullable().describe('the last failure of the head row, masked'),
});

const replicaFacts = z.object({
  owner: z.string().describe('lease owner, unique per process'),
  name: z.string().describe('instance name'),
  runs: z.string().describe('what it runs, comma-separated (outbox, mirror, ...)'),
  startedAt: instant,
  lastHeartbeatAt: instant,
  alive: z.boolean().describe('its liveness lock is held: its session is up'),
  claimed: count.describe('outbox rows it has claimed (sending under its lease)'),
  claimedDeliveries: count.describe('subscriber deliveries it has claimed (sending under its lease)'),
  oldestClaimAt: when,
});

const runningSync = z.object({
  id: count,
  resource: z.string(),
  startedAt: instant,
  pid: count.nullable().describe('process that started it'),
  lockHeld: z.boolean().describe("its resource's run lock is held; free: the replica running it is gone"),
});

const failure = { ref: z.string(), operationType: z.string(), at: instant };

/** One `schema_changes` row as status shows it (src/mirror/shape/shapeReads.ts's ChangeView, in short). */
const schemaChange = z.object({
  id: count,
  resource: z.string().describe('the mirror table (projects, unit_operations, custody_units, ...)'),
  field: z.string(),
  kind: z.string().describe('field-added, field-removed, type-changed, new-value or key-format-changed'),
  before: z.string().nullable(),
  after: z.string(),
  mapped: z.boolean().describe('the field is mapped to a column of the mirror'),
  firstSeenAt: instant,
  exampleKey: z.string().nullable().describe('the key of a record that showed it'),
  count: count.describe('records seen with it'),
});

/** Records the shape policy quarantined, still open, of one mirror table. */
const shapeQuarantine = z.object({
  resource: z.string().describe('the mirror table'),
  records: count,
  reason: z.string().describe('the reason of the newest of them'),
});

/** What status judges `upstream-schema-changed` on (issue 28: the operator's records change shape). */
const schemaFacts = z.object({
  since: instant.describe('changes first seen since this are recent: sync.schema.problem_hours ago'),
  recent: z.array(schemaChange).describe('changes first seen since then, newest first (at most 20)'),
  recentCount: count.describe('every change first seen since then'),
  recentMapped: count.describe('of them, the changes to a field mapped to a column'),
  quarantined: z
    .array(shapeQuarantine)
    .describe('records quarantined for their shape, still open (missing from the mirror), by table'),
  recorded: z
    .array(z.object({ resource: z.string(), kind: z.string(), changes: count }))
    .describe('every change ever recorded in schema_changes, by table and kind'),
});

const findingSeverity = z.enum(['critical', 'warning', 'info']);

/** One open `reconciliation_findings` row as status shows it (texts clipped). */
const reconciliationFinding = z.object({
  id: count,
  kind: z
    .string()
    .describe(
      'outstanding-negative, over-issuance, not-in-custody, retirement-missing, decision-overdue or deposit-not-tokenized',
    ),
  severity: findingSeverity,
  subject: z.string().describe('issuance, unit or operation'),
  subjectId: z.string().describe("the issuance or unit id, or the operation's marketplaceTransactionRef"),
  issuanceId: z.string().nullable(),
  ref: z.string().nullable().describe('the operation concerned, or the latest one on the issuance or unit'),
  expectedKg: z.number().nullable(),
  foundKg: z.number().nullable(),
  detail: z.string().describe('what was found, with the figures'),
  firstSeenAt: instant,
  lastSeenAt: instant,
});

/** What status judges `ledger-mismatch` on (issue 29: the marketplace's books against the registry's). */
const reconciliationFacts = z.object({
  open: z
    .array(z.object({ kind: z.string(), severity: findingSeverity, findings: count }))
    .describe('open findings by kind and severity, critical first'),
  recent: z
    .array(reconciliationFinding)
    .describe('open findings, critical first, then warning, then info, the newest first (at most 20)'),
  lastRecordedAt: when.describe('when a reconciliation pass last recorded, saw again or resolved a finding'),
});

export const snapshotSchema = z.object({
  resources: z.array(resourceFacts),
  outbox: z.object({
    byState: byName,
    oldestQueuedAt: when,
    paused: z.object({ reason: z.string(), since: instant }).nullable(),
    awaitingDecision: count.describe('accepted rows with no decision, accepted before the cutoff'),
    oldestAwaitingAt: when,
    oldestAcceptedAt: when.describe('when the oldest accepted row still waiting for a decision was accepted'),
    finishedSince: byName.describe('decided or ended in the recent window, by final state'),
    recentFailures: z.array(z.object({ ...failure, error: z.string().nullable() })),
  }),
  rejections: z.object({
    since: count,
    recent: z.array(z.object({ ...failure, reason: z.string().nullable() })),
  }),
  quarantine: byName.describe(
    'open quarantined records the sync could not read, by table (those quarantined for their shape: schema.quarantined)',
  ),
  schema: schemaFacts,
  reconciliation: reconciliationFacts,
  webhooks: z.object({
    received: count,
    verificationFailures: count,
    lastFailureReason: z.string().nullable(),
    conflicts: count,
    pendingOlderThanCutoff: count,
    lastReceivedAt: when,
    idReused: count.describe('events in the recent window whose webhook id had been seen with another body'),
    undecided: count.describe('events in the recent window whose decision could not be read'),
    lastUndecided: z.object({ type: z.string().nullable(), status: z.string().nullable() }).nullable(),
  }),
  database: databaseFacts,
  subscribers: z
    .array(subscriberBacklog)
    .optional()
    .describe('deliveries to [[subscribers]], per subscriber'),
  replicas: z
    .array(replicaFacts)
    .optional()
    .describe('a store shared by replicas only (PostgreSQL): every replica registered, alive or not'),
  runningSyncs: z
    .array(runningSync)
    .optional()
    .describe('a store shared by replicas only (PostgreSQL): sync runs marked running'),
});

export type HealthSnapshot = z.output<typeof snapshotSchema>;
export type ResourceFacts = z.output<typeof resourceFacts>;
export type DatabaseFacts = z.output<typeof databaseFacts>;
export type SubscriberBacklog = z.output<typeof subscriberBacklog>;
/** One replica as its `replicas` row and its liveness lock show it. */
export type ReplicaFacts = z.output<typeof replicaFacts>;
/** A sync run still marked `running`. */
export type RunningSync = z.output<typeof runningSync>;
export type SchemaFacts = z.output<typeof schemaFacts>;
export type SchemaChangeFacts = z.output<typeof schemaChange>;
export type ReconciliationFacts = z.output<typeof reconciliationFacts>;
export type ReconciliationFindingFacts = z.output<typeof reconciliationFinding>;

/** No fault seen. */
export const NO_FAULTS: DatabaseFacts = Object.freeze({
  writeFailure: null,
  lockedSince: null,
  corruption: null,
  readError: null,
});

/**
 * Where the snapshot is read: one call is one snapshot, read in one transaction (SQLite's
 * synchronously, PostgreSQL's in one REPEATABLE READ transaction), so both stores feed the same
 * rules the same facts.
 */
export interface HealthReads {
  /** Which store this is and where (for the identity): its kind, and its file or server without credentials. */
  store: StoreIdentity;
  /** The snapshot; throws when the database cannot be read (status turns that into a problem). */
  snapshot(window: SnapshotWindow, pageSize?: number): Promise<HealthSnapshot>;
  /** When the running daemon started, from its record in `daemon_state` (null: none). */
  daemonStartedAt(): Promise<string | null>;
  /** Notes a read error (SQLite records corruption); returns the facts to report, with why. */
  readFailed(err: unknown): DatabaseFacts;
  /** The status page's charts as of `now`; throws when the database cannot be read. */
  series(now: number): Promise<Series>;
}

/** The schema window's start when none was read. */
const EPOCH = new Date(0).toISOString();

/** The snapshot when the database cannot be read: no figures, only why. */
export function unreadableSnapshot(database: DatabaseFacts): HealthSnapshot {
  return {
    resources: [],
    outbox: {
      byState: {},
      oldestQueuedAt: null,
      paused: null,
      awaitingDecision: 0,
      oldestAwaitingAt: null,
      oldestAcceptedAt: null,
      finishedSince: {},
      recentFailures: [],
    },
    rejections: { since: 0, recent: [] },
    quarantine: {},
    schema: { since: EPOCH, recent: [], recentCount: 0, recentMapped: 0, quarantined: [], recorded: [] },
    reconciliation: { open: [], recent: [], lastRecordedAt: null },
    webhooks: {
      received: 0,
      verificationFailures: 0,
      lastFailureReason: null,
      conflicts: 0,
      pendingOlderThanCutoff: 0,
      lastReceivedAt: null,
      idReused: 0,
      undecided: 0,
      lastUndecided: null,
    },
    database: { ...NO_FAULTS, ...database },
  };
}

/** Times the snapshot counts from (ISO strings). */
export interface SnapshotWindow {
  /** Start of the "recent" window (rejections, failures, webhook counts): usually 24 hours ago. */
  recentSince: string;
  /** Accepted before this and still undecided is "awaiting too long". */
  decisionCutoff: string;
  /** Schema changes first seen since this are the status problem: `sync.schema.problem_hours` ago. */
  schemaSince: string;
}

/** Mirror tables by the name health reports them under. */
export const SYNC_RESOURCES: ReadonlyArray<{ resource: string; table: string }> = [
  { resource: 'projects', table: 'projects' },
  { resource: 'issuances', table: 'issuances' },
  { resource: 'units', table: 'unit_operations' },
  { resource: 'custody', table: 'custody_projects' },
];

/** The learned page-size cap in a checkpoint's state JSON, if readable. */
export function learnedPageSize(state: string | null | undefined): number | undefined {
  if (!state) return undefined;
  try {
    const value = (JSON.parse(state) as { pageSize?: unknown } | null)?.pageSize;
    return typeof value === 'number' ? value : undefined;
  } catch {
    // An unreadable state counts as none learned, as the sync itself reads it.
    return undefined;
  }
}

/** The smaller of two optional numbers, null when neither is known. */
export function minKnown(a: number | undefined, b: number | undefined): number | null {
  if (a === undefined) return b ?? null;
  return b === undefined ? a : Math.min(a, b);
}
