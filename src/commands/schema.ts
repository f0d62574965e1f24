import { openShapeReads } from '../app/openStores.js';
import { createLogger } from '../common/log.js';
import type { Config } from '../config/config.js';
import {
  BAD_SINCE,
  parseSchemaSince,
  SCHEMA_LIMIT_DEFAULT,
  SCHEMA_LIMIT_MAX,
  schemaTableOf,
  UNKNOWN_RESOURCE,
} from '../mirror/shape/schemaQuery.js';
import {
  type ChangeView,
  type FieldView,
  readSchema,
  type SchemaAnswer,
  type SchemaQuery,
  type ShapeReader,
} from '../mirror/shape/shapeReads.js';
import { type CommandStreams, commandOutput } from './commandOutput.js';
import { type Column, textTable } from './textTable.js';

/**
 * `vcu-sync schema [RESOURCE] [--since DATE] [--json]`: the shape the mirror learned of the
 * operator's records and the changes seen in it, as `GET /v1/schema` answers it. Exit 0 printed,
 * 2 a resource or date it does not know (one line naming what it takes).
 */

/** Exit code of a RESOURCE or --since the command does not take. */
export const EXIT_SCHEMA_USAGE = 2;

/** Options of `vcu-sync schema`. */
export interface SchemaCommandOptions extends CommandStreams {
  since?: string | undefined;
  json?: boolean;
}

/** The query the arguments ask, or the one line refusing them (pure). */
export function schemaQueryOf(
  resource: string | undefined,
  since: string | undefined,
): SchemaQuery | { refused: string } {
  const table = resource === undefined ? null : schemaTableOf(resource);
  if (table === undefined) return { refused: `schema: resource ${resource}: ${UNKNOWN_RESOURCE}` };
  const from = since === undefined ? null : parseSchemaSince(since);
  if (from === undefined) return { refused: `schema: --since ${since}: ${BAD_SINCE}` };
  return { resource: table, since: from, limit: SCHEMA_LIMIT_DEFAULT };
}

/** A share of the records read, as a percentage with one decimal ('-' when none were read). */
function share(part: number, records: number): string {
  if (records === 0) return '-';
  const percent = (100 * part) / records;
  return percent > 0 && percent < 0.1 ? '<0.1%' : `${Math.round(percent * 10) / 10}%`;
}

/** C0 and C1 control characters (ESC among them), as they would reach a terminal. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching them is the point
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/g;

/**
 * Text from the operator (field names, values, keys) as a terminal may show it: a control character
 * is printed as U+FFFD, so a value cannot move the cursor, recolour or retitle the reader's terminal.
 */
const shown = (text: string) => text.replace(CONTROL, '\ufffd');

const list = (values: readonly string[] | null) => (values === null ? '' : values.join(','));
/** Enum values may hold commas and are cut at 80 characters: ` | ` between them, and how many first. */
const valuesCell = (values: readonly string[]) => `${values.length}: ${values.join(' | ')}`;
const day = (iso: string | null) => (iso === null ? '' : iso.slice(0, 19).replace('T', ' '));

type FieldRow = Record<
  'resource' | 'field' | 'types' | 'mapped' | 'nulls' | 'absent' | 'removed' | 'values',
  string
>;
const FIELD_COLUMNS: ReadonlyArray<Column<keyof FieldRow>> = [
  ['RESOURCE', 'resource'],
  ['FIELD', 'field'],
  ['TYPES', 'types'],
  ['MAPPED', 'mapped'],
  ['NULL', 'nulls'],
  ['ABSENT', 'absent'],
  ['REMOVED', 'removed'],
  ['VALUES', 'values'],
];

/**
 * A field as its table line shows it: mapped as `column(types it admits)` or `_raw`; VALUES last (the
 * widest): an enum field's values, or the key's formats.
 */
function fieldRow(f: FieldView): FieldRow {
  return {
    resource: f.resource,
    field: shown(f.field),
    types: list(f.types),
    mapped: f.mapped ? `column(${list(f.admitted)})` : '_raw',
    nulls: share(f.nulls, f.records),
    absent: share(f.absent, f.records),
    values: shown(f.values !== null ? valuesCell(f.values) : list(f.keyFormats)),
    removed: day(f.removedAt),
  };
}

type ChangeRow = Record<
  'firstSeen' | 'resource' | 'field' | 'kind' | 'change' | 'mapped' | 'count' | 'example',
  string
>;
const CHANGE_COLUMNS: ReadonlyArray<Column<keyof ChangeRow>> = [
  ['FIRST_SEEN', 'firstSeen'],
  ['RESOURCE', 'resource'],
  ['FIELD', 'field'],
  ['KIND', 'kind'],
  ['CHANGE', 'change'],
  ['MAPPED', 'mapped'],
  ['COUNT', 'count'],
  ['EXAMPLE_KEY', 'example'],
];

function changeRow(c: ChangeView): ChangeRow {
  return {
    firstSeen: day(c.firstSeenAt),
    resource: c.resource,
    field: shown(c.field),
    kind: c.kind,
    change: shown(c.before === null ? c.after : `${c.before} -> ${c.after}`),
    mapped: c.mapped ? 'yes' : 'no',
    count: String(c.count),
    example: shown(c.exampleKey ?? ''),
  };
}

/** The answer as two tables, fields then changes (pure; times UTC). */
export function schemaText(answer: SchemaAnswer, query: SchemaQuery): string {
  const out: string[] = [];
  out.push(
    answer.fields.length === 0
      ? 'Fields: none learned yet (a sync reads the records first)'
      : `Fields (NULL and ABSENT: share of the records of the last complete scan)\n${textTable(FIELD_COLUMNS, answer.fields.map(fieldRow))}`,
  );
  const since = query.since === null ? '' : ` since ${query.since}`;
  if (answer.changes.length === 0) out.push(`Changes${since}: none`);
  else {
    out.push(
      `Changes${since}, newest first (UTC)\n${textTable(CHANGE_COLUMNS, answer.changes.map(changeRow))}`,
    );
    if (answer.changes.length === query.limit)
      out.push(
        `(the ${query.limit} newest shown; older ones: GET /v1/schema?limit=${SCHEMA_LIMIT_MAX}, or schema_changes with SQL)`,
      );
  }
  const held = Object.entries(answer.quarantined.counts);
  if (held.length > 0)
    out.push(
      `Held back by the policy (in quarantine; re-applied once the policy or mapping admits them): ${held
        .map(([resource, n]) => `${resource} ${n}`)
        .join(', ')}\n${answer.quarantined.records
        .map((r) => `  ${r.resource} ${shown(r.key ?? '(no key)')}: ${shown(r.reason)}`)
        .join('\n')}`,
    );
  return `${out.join('\n\n')}\n`;
}

/** Runs the command over `read`: prints the answer; the exit code. */
export async function runSchemaCommand(
  read: ShapeReader,
  query: SchemaQuery,
  opts: SchemaCommandOptions = {},
): Promise<number> {
  const { stdout, printJson } = commandOutput(opts);
  const answer = await readSchema(read, query);
  if (opts.json) printJson(answer);
  else stdout.write(schemaText(answer, query));
  return 0;
}

/** The CLI's entry: the arguments checked before the database is opened, read-only. */
export async function runSchemaCli(
  config: Config,
  resource: string | undefined,
  opts: SchemaCommandOptions,
): Promise<number> {
  const query = schemaQueryOf(resource, opts.since);
  if ('refused' in query) {
    commandOutput(opts).stderr.write(`vcu-sync: ${query.refused}\n`);
    return EXIT_SCHEMA_USAGE;
  }
  const reads = await openShapeReads(config, createLogger({ level: config.log.level, fd: 2 }));
  try {
    return await runSchemaCommand(reads.read, query, opts);
  } finally {
    await reads.close();
  }
}
