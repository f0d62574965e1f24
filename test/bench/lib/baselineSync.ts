import http from 'node:http';
import { performance } from 'node:perf_hooks';
import got, { type Got } from 'got';
import { RESOURCE_FIELDS, type ResourceName } from '../../../src/operator/fields.js';
import { JsonArraySplitter } from '../../../src/operator/splitJsonArray.js';
import { type OpenDatabase, openDatabase } from '../../../src/sqlite/open.js';

/** One list the baseline reads: its table and path. */
export interface BaselineList {
  table: Extract<ResourceName, 'projects' | 'issuances' | 'unit_operations'>;
  path: string;
}

/** How the baselines reach the simulator and write their database. */
export interface BaselineOptions {
  pageSize: number;
  synchronous: 'full' | 'normal';
  apiKey: string;
}

/** The column value of a raw field, without any validation (what a bare loop would do). */
function column(value: unknown): string | number | null {
  if (value === undefined || value === null) return null;
  if (typeof value === 'boolean') return value ? 1 : 0;
  if (typeof value === 'object') return JSON.stringify(value);
  return value as string | number;
}

/** A got client like the bare loop's: keep-alive, no retries, a timeout. */
function bareClient(apiKey: string): { client: Got; agent: http.Agent } {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });
  const client = got.extend({
    agent: { http: agent },
    retry: { limit: 0 },
    timeout: { request: 60_000 },
    headers: { apikey: apiKey },
  });
  return { client, agent };
}

/** The pages of one list, fetched one after another and parsed, until a short page. */
async function* pagesOf(
  client: Got,
  url: string,
  list: BaselineList,
  pageSize: number,
): AsyncGenerator<{ records: Record<string, unknown>[]; offset: number; text: string }> {
  for (let offset = 0; ; offset += pageSize) {
    const text = await client.get(`${url}${list.path}?limit=${pageSize}&offset=${offset}`).text();
    const records = JSON.parse(text) as Record<string, unknown>[];
    yield { records, offset, text };
    if (records.length < pageSize) return;
  }
}

/** A prepared upsert of one list's columns, one transaction per page. */
function pageWriter(
  database: OpenDatabase,
  list: BaselineList,
): (records: Record<string, unknown>[], offset: number) => void {
  const { fields, key } = RESOURCE_FIELDS[list.table];
  const positioned = list.table === 'unit_operations';
  const cols = [
    ...fields.map((f) => f.name),
    '_raw',
    '_hash',
    '_first_seen_at',
    '_last_seen_at',
    ...(positioned ? ['_position'] : []),
  ];
  const quoted = cols.map((c) => `"${c}"`);
  const updates = quoted.filter((c) => c !== `"${key}"` && c !== '"_first_seen_at"');
  const upsert = database.sqlite.prepare(
    `INSERT INTO ${list.table} (${quoted.join(', ')}) VALUES (${cols.map(() => '?').join(', ')})
     ON CONFLICT("${key}") DO UPDATE SET ${updates.map((c) => `${c} = excluded.${c}`).join(', ')}`,
  );
  return database.sqlite.transaction((records: Record<string, unknown>[], offset: number) => {
    const at = new Date().toISOString();
    records.forEach((r, i) => {
      const params: (string | number | null)[] = fields.map((f) => column(r[f.name]));
      params.push(JSON.stringify(r), '', at, at);
      if (positioned) params.push(offset + i);
      upsert.run(params);
    });
  });
}

/**
 * The bare baseline of a full sync: a got GET loop over the pages, JSON.parse, and a prepared
 * INSERT ... ON CONFLICT DO UPDATE of the same columns, one transaction per page, into a fresh
 * database built by the same migrations. Returns the records written.
 */
export async function bareSync(
  url: string,
  file: string,
  lists: readonly BaselineList[],
  options: BaselineOptions,
): Promise<number> {
  const database = openDatabase(file, { synchronous: options.synchronous });
  const { client, agent } = bareClient(options.apiKey);
  let total = 0;
  try {
    for (const list of lists) {
      const writePage = pageWriter(database, list);
      for await (const page of pagesOf(client, url, list, options.pageSize)) {
        writePage(page.records, page.offset);
        total += page.records.length;
      }
    }
  } finally {
    agent.destroy();
    database.close();
  }
  return total;
}

/** The pages' bodies as text, per list, as the fetch-only baseline received them. */
export type FetchedBodies = Map<BaselineList, string[]>;

/**
 * The fetch side alone: the same GET loop and JSON.parse as {@link bareSync}, nothing written.
 * Returns the records read and, when `keep`, each page's text for {@link writeOnly}.
 */
export async function fetchOnly(
  url: string,
  lists: readonly BaselineList[],
  options: BaselineOptions,
  keep: boolean,
): Promise<{ records: number; bodies: FetchedBodies }> {
  const { client, agent } = bareClient(options.apiKey);
  const bodies: FetchedBodies = new Map();
  let records = 0;
  try {
    for (const list of lists) {
      const texts: string[] = [];
      bodies.set(list, texts);
      for await (const page of pagesOf(client, url, list, options.pageSize)) {
        records += page.records.length;
        if (keep) texts.push(page.text);
      }
    }
  } finally {
    agent.destroy();
  }
  return { records, bodies };
}

/**
 * The write side alone: the same pages upserted as {@link bareSync} does, from bodies held in
 * memory. Each page is parsed outside the measured time (parsing is the fetch side's), so the
 * seconds returned are the transactions' alone.
 */
export function writeOnly(
  file: string,
  bodies: FetchedBodies,
  options: BaselineOptions,
): { records: number; seconds: number } {
  const database = openDatabase(file, { synchronous: options.synchronous });
  let records = 0;
  let ms = 0;
  try {
    for (const [list, texts] of bodies) {
      const writePage = pageWriter(database, list);
      texts.forEach((text, i) => {
        const page = JSON.parse(text) as Record<string, unknown>[];
        const t0 = performance.now();
        writePage(page, i * options.pageSize);
        ms += performance.now() - t0;
        records += page.length;
      });
    }
  } finally {
    database.close();
  }
  return { records, seconds: ms / 1000 };
}

/**
 * The bare baseline of a list served in one unpaginated body: one got stream, split into records by
 * the same streaming splitter vcu-sync uses (the fastest here: see src/operator/splitJsonArray.ts),
 * JSON.parse per record, and the same prepared upsert as {@link bareSync} in transactions of
 * `perCommit` records, into a fresh database built by the same migrations (same indexes).
 * Returns the records written.
 */
export async function bareStreamSync(
  url: string,
  file: string,
  list: BaselineList,
  options: BaselineOptions & { perCommit: number },
): Promise<number> {
  const database = openDatabase(file, { synchronous: options.synchronous });
  const { client, agent } = bareClient(options.apiKey);
  const writeRecords = pageWriter(database, list);
  const splitter = new JsonArraySplitter();
  let held: Record<string, unknown>[] = [];
  let total = 0;
  const commit = () => {
    writeRecords(held, total);
    total += held.length;
    held = [];
  };
  try {
    // The whole log is one request: a loaded host may take minutes to send it.
    const body = client.stream(`${url}${list.path}?limit=${options.pageSize}&offset=0`, {
      timeout: { request: 600_000 },
    });
    for await (const chunk of body) {
      for (const text of splitter.push(chunk as Buffer)) {
        held.push(JSON.parse(text as string) as Record<string, unknown>);
        if (held.length >= options.perCommit) commit();
      }
    }
    splitter.end();
    commit();
  } finally {
    agent.destroy();
    database.close();
  }
  return total;
}
