import { postgresBinDir } from '../../helpers/postgres.js';

/** One row of the benchmark table, as printed and as written to the JSON file. */
export interface ScenarioResult {
  /** Scenario name, as the table names it. */
  scenario: string;
  /** What is measured, with its unit, e.g. "records/s". */
  measure: string;
  /** vcu-sync's figure. */
  value: number;
  /** The baseline's figure in the same run (default: null when the scenario has none). */
  baseline: number | null;
  /** value / baseline (default: null without a baseline). */
  ratio: number | null;
  /** The target as text, e.g. ">= 0.8 x baseline". */
  target: string;
  /** Whether the target was met. */
  met: boolean;
  /** How it was measured: pragmas, page size, concurrency, in-process or child (default: ""). */
  notes: string;
  /** Extra figures worth keeping in the JSON (default: {}). */
  extra?: Record<string, number | string>;
}

/** What every scenario gets: the scale and where to put temporary files. */
export interface BenchOptions {
  /** Small sizes so the whole run takes well under a minute. */
  quick: boolean;
  /** A temporary folder for databases, removed after the run. */
  dir: string;
  /** Progress lines go here (stderr), never into the table. */
  say: (line: string) => void;
}

/** A scenario file's export. */
export type Scenario = (options: BenchOptions) => Promise<ScenarioResult[]>;

/** value/baseline, or null. */
export function ratioOf(value: number, baseline: number | null): number | null {
  return baseline === null || baseline === 0 ? null : value / baseline;
}

/**
 * Whether a PostgreSQL scenario must be skipped here (no server installed): says so, naming the
 * scenario, so a run on a machine without one still prints every other row.
 */
export function postgresMissing(name: string, options: Pick<BenchOptions, 'say'>): boolean {
  try {
    postgresBinDir();
    return false;
  } catch (err) {
    options.say(`${name} skipped: ${(err as Error).message}`);
    return true;
  }
}
