import type { Sqlite } from '../db/open.js';
import { perHandle } from '../db/perHandle.js';
import type { TableDef } from './resources.js';
import type { StoredState } from './writeDecision.js';

/**
 * The SQL of the mirror tables themselves (upsert, tombstone, overlap, custody), prepared once per
 * database and table and reused on the hot path. Identifiers come from the field lists in
 * operator/fields.ts, never from input.
 */

const q = (name: string) => `"${name.replaceAll('"', '""')}"`;

/** A row value as it goes into a prepared statement. */
type Value = string | number | null;

/** Prepared statements of one mirror table. */
export class MirrorTable {
  private readonly getStmt;
  private readonly insertStmt;
  private readonly updateStmt;
  private readonly positionStmt;
  private readonly liveCountStmt;
  private readonly hasLiveStmt;
  private readonly unseenCountStmt;
  private readonly tombstoneStmt;
  private readonly overlapStmt;
  private readonly endCustodyStmt;

  constructor(
    sqlite: Sqlite,
    readonly def: TableDef,
  ) {
    const t = q(def.table);
    const k = q(def.key);
    const cols = def.fields.map((f) => q(f.name));
    const extraCols = def.positioned ? [q('_position')] : [];
    this.getStmt = sqlite.prepare<[string], StoredState>(
      `SELECT _hash AS hash, _removed_at AS removedAt, ${def.positioned ? '_position' : 'NULL'} AS position,
        ${def.custody ? '_custody_ended_at' : 'NULL'} AS custodyEndedAt FROM ${t} WHERE ${k} = ?`,
    );
    const insertCols = [...cols, '_raw', '_hash', '_first_seen_at', '_last_seen_at', ...extraCols];
    this.insertStmt = sqlite.prepare<Value[]>(
      `INSERT INTO ${t} (${insertCols.join(', ')}) VALUES (${insertCols.map(() => '?').join(', ')})`,
    );
    const sets = [
      ...cols.filter((c) => c !== k).map((c) => `${c} = ?`),
      '_raw = ?',
      '_hash = ?',
      '_last_seen_at = ?',
      '_removed_at = NULL',
      ...(def.custody ? ['_custody_ended_at = NULL'] : []),
      ...extraCols.map((c) => `${c} = ?`),
    ];
    this.updateStmt = sqlite.prepare<Value[]>(`UPDATE ${t} SET ${sets.join(', ')} WHERE ${k} = ?`);
    this.positionStmt = def.positioned
      ? sqlite.prepare<[number, string]>(`UPDATE ${t} SET _position = ? WHERE ${k} = ?`)
      : undefined;
    this.liveCountStmt = sqlite.prepare<[], { n: number }>(
      `SELECT count(*) AS n FROM ${t} WHERE _removed_at IS NULL`,
    );
    this.hasLiveStmt = sqlite.prepare<[], { n: number }>(
      `SELECT EXISTS (SELECT 1 FROM ${t} WHERE _removed_at IS NULL) AS n`,
    );
    const unseen = `_removed_at IS NULL AND ${k} NOT IN (SELECT record_id FROM sync_seen WHERE resource = ?)`;
    this.unseenCountStmt = sqlite.prepare<[string], { n: number }>(
      `SELECT count(*) AS n FROM ${t} WHERE ${unseen}`,
    );
    this.tombstoneStmt = sqlite.prepare<[string, string], { key: string }>(
      `UPDATE ${t} SET _removed_at = ? WHERE ${unseen} RETURNING ${k} AS key`,
    );
    this.overlapStmt = def.positioned
      ? sqlite.prepare<[number, number], { key: string; hash: string; position: number }>(
          `SELECT ${k} AS key, _hash AS hash, _position AS position FROM ${t}
           WHERE _removed_at IS NULL AND _position >= ? AND _position < ?`,
        )
      : undefined;
    this.endCustodyStmt = def.custody
      ? sqlite.prepare<[string, string]>(
          `UPDATE ${t} SET _custody_ended_at = ? WHERE ${k} = ? AND _custody_ended_at IS NULL`,
        )
      : undefined;
  }

  get(key: string): StoredState | undefined {
    return this.getStmt.get(key);
  }

  /** `values` in field order (key first, as the field lists have it). */
  insert(values: readonly Value[], raw: string, hash: string, at: string, position: number | null): void {
    const params: Value[] = [...values, raw, hash, at, at];
    if (this.def.positioned) params.push(position);
    this.insertStmt.run(...params);
  }

  update(
    key: string,
    values: readonly Value[],
    raw: string,
    hash: string,
    at: string,
    position: number | null,
  ): void {
    const params: Value[] = [];
    for (let i = 0; i < values.length; i++)
      if (this.def.fields[i]!.name !== this.def.key) params.push(values[i]!);
    params.push(raw, hash, at);
    if (this.def.positioned) params.push(position);
    params.push(key);
    this.updateStmt.run(...params);
  }

  setPosition(key: string, position: number): void {
    this.positionStmt?.run(position, key);
  }

  liveCount(): number {
    return this.liveCountStmt.get()!.n;
  }

  /** Whether any row is live: what a scan's start needs, without counting a million rows. */
  hasLive(): boolean {
    return this.hasLiveStmt.get()!.n === 1;
  }

  /** Live rows the current scan has not seen. */
  unseenCount(): number {
    return this.unseenCountStmt.get(this.def.table)!.n;
  }

  /** Marks every live row the scan has not seen as removed; returns their keys. */
  tombstoneUnseen(at: string): string[] {
    return this.tombstoneStmt.all(at, this.def.table).map((r) => r.key);
  }

  /** Live rows of the units log at positions [from, to). */
  overlapRows(from: number, to: number): { key: string; hash: string; position: number }[] {
    return this.overlapStmt ? this.overlapStmt.all(from, to) : [];
  }

  /** Marks a custody row as out of custody; true when the row existed and was in custody. */
  endCustody(key: string, at: string): boolean {
    return (this.endCustodyStmt?.run(at, key).changes ?? 0) > 0;
  }
}

/** Each handle's tables, prepared on first use. */
const tablesOf = perHandle(() => new Map<string, MirrorTable>());

/** The statements of one mirror table, prepared on first use per database handle. */
export function mirrorTable(sqlite: Sqlite, def: TableDef): MirrorTable {
  const tables = tablesOf(sqlite);
  let table = tables.get(def.table);
  if (!table) {
    table = new MirrorTable(sqlite, def);
    tables.set(def.table, table);
  }
  return table;
}
