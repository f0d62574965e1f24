import type { Logger } from '../common/log.js';
import { type FindingNotice, noticeView, type PassOutcome } from './pass.js';

/**
 * The reconciler's log lines of one pass: a debug line for the pass, a line per finding opened
 * (a warning, or info for an info finding) and per finding resolved, at most MAX_NOTICE_LINES of
 * each and then one line saying how many more, so a first pass over a large backlog does not
 * flood the log (`vcu-sync reconcile` and the API list them all).
 */

/** Finding lines (opened, and resolved, each) written per pass before one summary line. */
export const MAX_NOTICE_LINES = 20;

/** One line to write. */
export interface LogLine {
  level: 'debug' | 'info' | 'warn';
  fields: Record<string, unknown>;
  msg: string;
}

/** The log line's fields: the notice without its sentence and time (the message has the one, the line the other). */
function noticeFields(event: string, n: FindingNotice): Record<string, unknown> {
  const { detail: _detail, at: _at, ...fields } = noticeView(n);
  return { event, ...fields };
}

/** How many of `notices` there are per kind. */
function byKind(notices: readonly FindingNotice[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const n of notices) out[n.finding.kind] = (out[n.finding.kind] ?? 0) + 1;
  return out;
}

/** The lines of a pass that took `ms` (pure). */
export function passLines(outcome: PassOutcome, ms: number): LogLine[] {
  const scope = outcome.scope === null ? 'all' : outcome.scope.length;
  const lines: LogLine[] = [
    {
      level: 'debug',
      fields: {
        event: 'reconcile.pass',
        scope,
        operations: outcome.operations,
        sheets: outcome.sheets,
        open: outcome.open,
        opened: outcome.opened.length,
        resolved: outcome.resolved.length,
        ms,
      },
      msg: `reconciled ${scope === 'all' ? 'every issuance' : `${scope} issuance(s)`}: ${outcome.opened.length} finding(s) opened, ${outcome.resolved.length} resolved, ${outcome.open} open`,
    },
  ];
  for (const n of outcome.opened.slice(0, MAX_NOTICE_LINES)) {
    lines.push({
      level: n.finding.severity === 'info' ? 'info' : 'warn',
      fields: noticeFields('reconcile.finding', n),
      msg: `${n.finding.severity} ${n.finding.kind}: ${n.finding.detail}`,
    });
  }
  const moreOpened = outcome.opened.slice(MAX_NOTICE_LINES);
  if (moreOpened.length > 0) {
    lines.push({
      level: moreOpened.some((n) => n.finding.severity !== 'info') ? 'warn' : 'info',
      fields: { event: 'reconcile.finding.more', more: moreOpened.length, kinds: byKind(moreOpened) },
      msg: `and ${moreOpened.length} more finding(s) opened (vcu-sync reconcile lists them)`,
    });
  }
  for (const n of outcome.resolved.slice(0, MAX_NOTICE_LINES)) {
    lines.push({
      level: 'info',
      fields: noticeFields('reconcile.resolved', n),
      msg: `resolved ${n.finding.kind} on ${n.finding.subject} ${n.finding.subjectId}`,
    });
  }
  const moreResolved = outcome.resolved.slice(MAX_NOTICE_LINES);
  if (moreResolved.length > 0) {
    lines.push({
      level: 'info',
      fields: { event: 'reconcile.resolved.more', more: moreResolved.length, kinds: byKind(moreResolved) },
      msg: `and ${moreResolved.length} more finding(s) resolved`,
    });
  }
  return lines;
}

/** Writes the lines of a pass. */
export function logPass(log: Logger, outcome: PassOutcome, ms: number): void {
  for (const line of passLines(outcome, ms)) log[line.level](line.fields, line.msg);
}
