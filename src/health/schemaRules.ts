import type { Problem, RuleInputs } from './problems.js';
import type { HealthSnapshot, SchemaChangeFacts } from './snapshot.js';

/**
 * `upstream-schema-changed` (issue 28): the operator's records changed shape. Present while a
 * change first seen within `sync.schema.problem_hours` is recorded, or records the shape policy
 * quarantined are still open; critical when such a change hits a field mapped to a column (apps
 * reading that column may misread it) or records are quarantined (they are missing from the mirror).
 */

/** Changes named one by one in the message; the rest are counted. */
const NAMED_CHANGES = 5;

/** What happened to a field, in a few words ("number -> string (mapped)"). */
export function changeWords(c: SchemaChangeFacts): string {
  const what = (() => {
    switch (c.kind) {
      case 'field-added':
        return `added (${c.after})`;
      case 'field-removed':
        return 'removed';
      case 'type-changed':
        return `${c.before ?? '?'} -> ${c.after}`;
      case 'new-value':
        return `new value ${JSON.stringify(c.after)}`;
      case 'key-format-changed':
        return `key format ${c.before ?? '?'} -> ${c.after}`;
      default:
        return `${c.kind} ${c.after}`;
    }
  })();
  return `${what}${c.mapped ? ' (mapped)' : ''}`;
}

/** A change named with its table and field ("projects.totalEstimatedUnits number -> string (mapped)"). */
export const describeChange = (c: SchemaChangeFacts) => `${c.resource}.${c.field} ${changeWords(c)}`;

/** The window's length in hours (`sync.schema.problem_hours`), as the snapshot was read. */
export const windowHours = (schema: HealthSnapshot['schema'], now: number) =>
  Math.max(1, Math.round((now - Date.parse(schema.since)) / 3_600_000));

const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

/** What to do, for the kinds of change present. */
function advice(schema: HealthSnapshot['schema'], tables: readonly string[]): string {
  const kinds = new Set(schema.recent.map((c) => c.kind));
  const steps = [`read what changed: ${tables.map((t) => `vcu-sync schema ${t}`).join(', ')}`];
  if (schema.quarantined.length > 0) {
    steps.push(
      'records are quarantined (the reason says why): wait for a release that maps the new type, or set on_type_change = "store" (on_new_value = "store" for a new value) in [sync.schema] and restart; they come back on the next run',
    );
  } else if (schema.recent.some((c) => c.kind === 'type-changed' && c.mapped)) {
    steps.push(
      'a mapped field changed type and its records were stored: the column is null, the value in _raw',
    );
  }
  if (kinds.has('new-value')) steps.push('a new state value: tell the apps that read that column');
  if (kinds.has('field-removed') || kinds.has('key-format-changed'))
    steps.push('a field gone or a new key format: tell the apps that read it');
  if (kinds.has('field-added')) steps.push('a new field needs nothing: it is kept in _raw');
  return steps.join('; ');
}

export function schemaProblems(snapshot: HealthSnapshot, inputs: RuleInputs): Problem[] {
  const { schema } = snapshot;
  const quarantinedRecords = schema.quarantined.reduce((n, q) => n + q.records, 0);
  if (schema.recentCount === 0 && quarantinedRecords === 0) return [];
  const parts: string[] = [];
  if (schema.recentCount > 0) {
    const named = schema.recent.slice(0, NAMED_CHANGES).map(describeChange);
    const more = schema.recentCount - named.length;
    parts.push(
      `${plural(schema.recentCount, 'change')} to the operator's records in the last ${windowHours(schema, inputs.now)}h: ${named.join(', ')}${more > 0 ? `, and ${more} more` : ''}`,
    );
  }
  if (quarantinedRecords > 0) {
    parts.push(
      `${plural(quarantinedRecords, 'record')} quarantined for their shape, missing from the mirror: ${schema.quarantined
        .map((q) => `${q.resource} ${q.records} (${q.reason})`)
        .join(', ')}`,
    );
  }
  const tables = [
    ...new Set([...schema.recent.map((c) => c.resource), ...schema.quarantined.map((q) => q.resource)]),
  ].sort();
  return [
    {
      severity: schema.recentMapped > 0 || quarantinedRecords > 0 ? 'critical' : 'warning',
      code: 'upstream-schema-changed',
      message: parts.join('; '),
      action: advice(schema, tables),
    },
  ];
}
