import type {
  NEW_VALUE_POLICIES,
  SchemaDriftSettings,
  TYPE_CHANGE_POLICIES,
} from '../../config/configShape.js';
import type { ResourceName } from '../../operator/fields.js';

/**
 * What the mirror does when the operator's records change shape (`[sync.schema]`, src/config/configShape.ts),
 * as dlt's schema contracts do: a new field is always kept in `_raw` and reported (evolve); a field
 * mapped to a column that arrives with another JSON type is quarantined with the reason, stored
 * with the column left null, or fails the run; an enum-like field's unseen value is stored or
 * quarantined. Nothing is coerced silently: every change is a `schema_changes` row whatever the policy.
 */

export type TypeChangePolicy = (typeof TYPE_CHANGE_POLICIES)[number];
export type NewValuePolicy = (typeof NEW_VALUE_POLICIES)[number];

/** The policy of one table, resolved from `[sync.schema]` and its per-table override. */
export interface ShapePolicy {
  onTypeChange: TypeChangePolicy;
  onNewValue: NewValuePolicy;
  /** Fields whose values are tracked as a set (state-carrying and enum-like fields). */
  enumFields: ReadonlySet<string>;
}

/** The policy for `table`, or undefined when learning is off (pure). */
export function shapePolicy(settings: SchemaDriftSettings, table: ResourceName): ShapePolicy | undefined {
  if (!settings.learn) return undefined;
  const own = settings.tables[table] ?? {};
  return {
    onTypeChange: own.on_type_change ?? settings.on_type_change,
    onNewValue: own.on_new_value ?? settings.on_new_value,
    enumFields: new Set(settings.enum_fields),
  };
}

/** The prefix of a quarantine reason the shape policy gave: such records are re-applied by later runs. */
export const SHAPE_REASON_PREFIX = 'schema: ';
