import type { Logger } from '../../common/log.js';
import type { SchemaChangeNotice } from './tracker.js';

/**
 * One `sync.schema.changed` line per change of the operator's records' shape, once it committed:
 * a warning, an error when it hits a field the mirror maps to a column.
 */
export function logSchemaChanges(log: Logger, changes: readonly SchemaChangeNotice[] | undefined): void {
  for (const c of changes ?? []) {
    const { id, resource, at: _at, ...what } = c;
    const fields = { event: 'sync.schema.changed', table: resource, ...what, changeId: id };
    const text = `${c.resource}.${c.field}: ${c.kind} (${c.before ?? 'nothing'} -> ${c.after})`;
    if (c.mapped) log.error(fields, `the operator's records changed shape in a mapped field: ${text}`);
    else log.warn(fields, `the operator's records changed shape: ${text}`);
  }
}
