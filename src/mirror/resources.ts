import type { SyncTarget } from '../common/syncRequests.js';
import type { Config } from '../config/config.js';
import { type FieldDef, RESOURCE_FIELDS, type ResourceName } from '../operator/fields.js';

/**
 * One mirrored table: where its records live and how they are keyed. Vocabulary: a *resource* is
 * what the API, the CLI and `sync_runs` name (`units`); its *table* is where it is mirrored
 * (`unit_operations`), which is also what `changes.resource`, `sync_seen` and `quarantine` hold.
 */
export interface TableDef {
  /** Table name; also the `resource` column of its `changes` rows (the feed's documented values). */
  readonly table: ResourceName;
  readonly fields: readonly FieldDef[];
  /** The key field (a TEXT primary key). */
  readonly key: string;
  /** Has `_position` (the units log). */
  readonly positioned: boolean;
  /** Has `_custody_ended_at` (the custody tables). */
  readonly custody: boolean;
}

/** A public list synced by paging. */
export interface ListResource extends TableDef {
  /** The resource (`sync_runs.resource`, `sync_checkpoints.resource`, log lines). */
  readonly name: Exclude<SyncTarget, 'custody'>;
  /** Operation name for metrics (getProjectList, ...). */
  readonly operation: string;
  readonly path: string;
  /** Synced as a log: incremental from the last known position, with an overlap. */
  readonly log: boolean;
}

/** A Marketplace Data read for ids in custody. */
export interface CustodyResource extends TableDef {
  /** `custody_ids.kind`. */
  readonly kind: 'projects' | 'issuances' | 'units';
  readonly operation: string;
  /** Path template with `{id}`. */
  readonly pathTemplate: string;
}

function tableDef(table: ResourceName, extra: { positioned?: boolean; custody?: boolean } = {}): TableDef {
  const { fields, key } = RESOURCE_FIELDS[table];
  return { table, fields, key, positioned: extra.positioned ?? false, custody: extra.custody ?? false };
}

/** The three public lists, with their paths from the configuration. */
export function listResources(config: Config): Record<ListResource['name'], ListResource> {
  const op = config.operator;
  return {
    projects: {
      ...tableDef('projects'),
      name: 'projects',
      operation: 'getProjectList',
      path: op.projects_path,
      log: false,
    },
    issuances: {
      ...tableDef('issuances'),
      name: 'issuances',
      operation: 'getIssuanceList',
      path: op.issuances_path,
      log: false,
    },
    units: {
      ...tableDef('unit_operations', { positioned: true }),
      name: 'units',
      operation: 'getUnitList',
      path: op.units_path,
      log: true,
    },
  };
}

/** The three custody reads, in the order they are synced. */
export function custodyResources(config: Config): CustodyResource[] {
  const op = config.operator;
  return [
    {
      ...tableDef('custody_projects', { custody: true }),
      kind: 'projects',
      operation: 'getProjectData',
      pathTemplate: op.project_data_path,
    },
    {
      ...tableDef('custody_issuances', { custody: true }),
      kind: 'issuances',
      operation: 'getIssuanceData',
      pathTemplate: op.issuance_data_path,
    },
    {
      ...tableDef('custody_units', { custody: true }),
      kind: 'units',
      operation: 'getUnitsData',
      pathTemplate: op.units_data_path,
    },
  ];
}

/** The path of one custody read; the id is URL-encoded so an odd id cannot change the path. */
export function custodyPath(resource: CustodyResource, id: string): string {
  return resource.pathTemplate.replaceAll('{id}', encodeURIComponent(id));
}
