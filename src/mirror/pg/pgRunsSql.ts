import type pg from 'pg';
import type { RunCounts } from '../bookkeeping.js';
import type { Checkpoint } from '../scan/checkpoint.js';

/**
 * Several writes sent as one statement: each part is an INSERT, UPDATE or DELETE numbered from $1,
 * renumbered here and joined as data-modifying CTEs (`WITH w1 AS (...), w2 AS (...) <last>`), so a
 * batch's bookkeeping costs one round trip, not one per table. The parts must touch different rows
 * (PostgreSQL runs them on one snapshot).
 */
export class SqlBuilder {
  private readonly parts: string[] = [];
  private readonly params: unknown[] = [];

  /** The number the next parameter gets. */
  next(): number {
    return this.params.length + 1;
  }

  /** A part whose parameters are numbered from $1. */
  add(sql: string, params: readonly unknown[]): this {
    const offset = this.params.length;
    this.parts.push(offset === 0 ? sql : sql.replace(/\$(\d+)/g, (_, n: string) => `$${Number(n) + offset}`));
    this.params.push(...params);
    return this;
  }

  /** A part already numbered from {@link next}. */
  addRaw(sql: string, params: readonly unknown[]): this {
    this.parts.push(sql);
    this.params.push(...params);
    return this;
  }

  async run(client: pg.ClientBase | pg.Pool): Promise<void> {
    if (this.parts.length === 0) return;
    const last = this.parts[this.parts.length - 1]!;
    const ctes = this.parts.slice(0, -1).map((part, i) => `w${i} AS (${part})`);
    await client.query(ctes.length > 0 ? `WITH ${ctes.join(', ')} ${last}` : last, this.params);
  }
}

/** The `sync_runs` count columns, in RunCounts' order. */
export const COUNT_COLUMNS = [
  'fetched',
  'inserted',
  'updated',
  'removed',
  'unchanged',
  'quarantined',
  'pages',
] as const;

/** The run's counts so far (`sync_runs` as SQLite's `progress`). */
export function progressSql(b: SqlBuilder, runId: number, c: RunCounts): void {
  b.add(
    `UPDATE sync_runs SET ${COUNT_COLUMNS.map((col, i) => `${col} = $${i + 2}`).join(', ')} WHERE id = $1`,
    [runId, ...COUNT_COLUMNS.map((col) => c[col])],
  );
}

/** The resource's checkpoint, as SQLite's `putCheckpoint` writes it. */
export function checkpointSql(b: SqlBuilder, cp: Checkpoint, at: string): void {
  b.add(
    `INSERT INTO sync_checkpoints (resource, run_id, mode, next_offset, scan_started_at, state, updated_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7)
     ON CONFLICT (resource) DO UPDATE SET run_id = excluded.run_id, mode = excluded.mode,
       next_offset = excluded.next_offset, scan_started_at = excluded.scan_started_at,
       state = excluded.state, updated_at = excluded.updated_at`,
    [cp.resource, cp.runId, cp.mode, cp.nextOffset, cp.scanStartedAt, JSON.stringify(cp.state), at],
  );
}
