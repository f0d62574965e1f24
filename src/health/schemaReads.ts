import { inByteOrder } from '../common/textForms.js';
import { changeView } from '../mirror/shape/shapeReads.js';
import { type ChangeRowRead, listChanges, SHAPE_QUARANTINE_LIKE } from '../mirror/shape/shapeStatements.js';
import { all, first, type Script } from '../store/script.js';
import { sql } from '../store/sql.js';
import type { SchemaChangeFacts, SchemaFacts } from './snapshot.js';

/**
 * The snapshot's schema-drift facts (`upstream-schema-changed`, the `vcu_sync_schema_*` gauges, the
 * status page's "Upstream schema"), read in the snapshot's transaction with the statements of
 * src/mirror/shape/, written once for both stores. Everything is bounded: the recent changes to
 * {@link RECENT_CHANGES}, the tallies by table and kind (a handful of rows), each text clipped.
 */

/** Most recent changes the snapshot lists; the counts cover the rest. */
export const RECENT_CHANGES = 20;

/** Longest text of a change or a reason the snapshot carries (the operator's values may be long). */
const TEXT_MAX = 200;

const clip = (text: string) => (text.length > TEXT_MAX ? `${text.slice(0, TEXT_MAX - 1)}…` : text);
const clipOrNull = (text: string | null) => (text === null ? null : clip(text));

/** A change as the snapshot shows it. */
export function changeFacts(row: ChangeRowRead): SchemaChangeFacts {
  const c = changeView(row);
  return {
    id: c.id,
    resource: c.resource,
    field: c.field,
    kind: c.kind,
    before: clipOrNull(c.before),
    after: clip(c.after),
    mapped: c.mapped,
    firstSeenAt: c.firstSeenAt,
    exampleKey: clipOrNull(c.exampleKey),
    count: c.count,
  };
}

/** The schema facts as of the window starting at `since` (ISO). */
export function* schemaFacts(since: string): Script<SchemaFacts> {
  const recent = yield* all<ChangeRowRead>(listChanges(null, since, RECENT_CHANGES));
  const counts = yield* first<{ n: number; mapped: number }>(
    sql`SELECT count(*) AS n, count(*) FILTER (WHERE mapped = ${true}) AS mapped
          FROM schema_changes WHERE first_seen_at >= ${since}`,
  );
  const quarantined = yield* all<{ resource: string; records: number; reason: string }>(
    sql`SELECT q.resource, c.records, q.reason
          FROM (SELECT resource, count(*) AS records, max(id) AS newest FROM quarantine
                 WHERE resolved_at IS NULL AND reason LIKE ${SHAPE_QUARANTINE_LIKE} GROUP BY resource) c
          JOIN quarantine q ON q.id = c.newest`,
  );
  const recorded = yield* all<{ resource: string; kind: string; changes: number }>(
    sql`SELECT resource, kind, count(*) AS changes FROM schema_changes GROUP BY resource, kind`,
  );
  return {
    since: new Date(since).toISOString(),
    recent: recent.map(changeFacts),
    recentCount: Number(counts?.n ?? 0),
    recentMapped: Number(counts?.mapped ?? 0),
    // Sorted here: SQLite has no "C" collation, and PostgreSQL's default may not be byte order.
    quarantined: quarantined
      .map((q) => ({ resource: q.resource, records: Number(q.records), reason: clip(q.reason) }))
      .sort((a, b) => inByteOrder(a.resource, b.resource)),
    recorded: recorded
      .map((r) => ({ ...r, changes: Number(r.changes) }))
      .sort((a, b) => inByteOrder(a.resource, b.resource) || inByteOrder(a.kind, b.kind)),
  };
}
