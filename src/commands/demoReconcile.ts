import { FINDING_SEVERITIES, type FindingSeverity } from '../reconcile/findingKinds.js';
import type { RuleSettings } from '../reconcile/findings.js';
import { type PassOutcome, runPass } from '../reconcile/pass.js';
import type { ScriptStore } from '../store/script.js';
import { sql } from '../store/sql.js';
import type { DemoApi } from './demoApi.js';

/**
 * The demo's reconciliation (issue 29), on demand as `vcu-sync reconcile` runs it: the public units log synced
 * (so the retirements the operator booked are in the mirror), one pass over everything through the
 * core (src/reconcile/pass.ts), and the open findings read back as lines for stdout.
 */

export interface DemoReconcileDeps {
  store: ScriptStore;
  settings: RuleSettings;
  api: DemoApi;
}

/** An open finding as the demo prints it. */
export interface OpenFinding {
  kind: string;
  severity: string;
  subject: string;
  subject_id: string;
  detail: string;
}

/** Longest wait for the units sync before a pass. */
const UNITS_SYNC_MS = 20_000;

const openFindings = (store: ScriptStore) =>
  store.read<OpenFinding & { id: number }>(
    sql`SELECT id, kind, severity, subject, subject_id, detail FROM reconciliation_findings
         WHERE resolved_at IS NULL ORDER BY id`,
  );

const rank = (severity: string) => {
  const i = FINDING_SEVERITIES.indexOf(severity as FindingSeverity);
  return i < 0 ? FINDING_SEVERITIES.length : i;
};

/** One finding on one line: severity, kind, subject and what it says, the subject said once (pure). */
export function findingLine(f: OpenFinding): string {
  const subject = `${f.subject} ${f.subject_id}`;
  const detail = f.detail.startsWith(`${subject}: `) ? f.detail.slice(subject.length + 2) : f.detail;
  return `  ${f.severity.padEnd(8)}  ${f.kind.padEnd(20)}  ${subject}: ${detail}`;
}

/** The open findings in a few words for the progress line (pure). */
export function findingsSummary(open: readonly OpenFinding[]): string {
  if (open.length === 0) return 'no open finding';
  const counts = FINDING_SEVERITIES.map((s) => [s, open.filter((f) => f.severity === s).length] as const)
    .filter(([, n]) => n > 0)
    .map(([s, n]) => `${n} ${s}`);
  return `${open.length} open finding${open.length === 1 ? '' : 's'} (${counts.join(', ')})`;
}

/**
 * Syncs the units log, runs one pass over everything and reads the open findings, the gravest
 * first; null when the units sync did not end in time (a pass would see booked retirements missing).
 */
export async function reconcileNow(
  deps: DemoReconcileDeps,
): Promise<{ outcome: PassOutcome; open: OpenFinding[] } | null> {
  if (!(await deps.api.syncAndWait('units', UNITS_SYNC_MS))) return null;
  return passAndRead(deps);
}

async function passAndRead(deps: DemoReconcileDeps): Promise<{ outcome: PassOutcome; open: OpenFinding[] }> {
  const outcome = await runPass({ store: deps.store, settings: deps.settings, now: () => Date.now() }, null);
  const open = (await openFindings(deps.store)).sort(
    (a, b) => rank(a.severity) - rank(b.severity) || a.id - b.id,
  );
  return { outcome, open };
}

/**
 * The demo's last word: a pass after everything settled; a condition about to turn (a retirement
 * window ending within `waitMs`) is waited for and looked at again, so a retirement approved just
 * before the stop is judged rather than left pending.
 */
export async function finalReconcile(deps: DemoReconcileDeps, waitMs: number): Promise<OpenFinding[] | null> {
  const first = await reconcileNow(deps);
  if (!first) return null;
  const now = Date.now();
  const soon = [...first.outcome.dueAt.values()].filter((at) => at <= now + waitMs);
  if (soon.length === 0) return first.open;
  await new Promise((resolve) => setTimeout(resolve, Math.max(...soon) - now + 1));
  return (await passAndRead(deps)).open;
}
