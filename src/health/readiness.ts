/**
 * Readiness, beside liveness: `/healthz` says the process answers (restart it if not); `/readyz`
 * says this instance can do its job now (send it traffic): the database takes writes, its schema
 * is current, both listeners are up and sending to the operator is not paused. A pure judge over
 * facts gathered by a thin edge, so each not-ready case is a row in a table test.
 */
export interface ReadinessFacts {
  /** null when the database answered; otherwise why not (its error, or no answer within the bound). */
  databaseUnanswered: string | null;
  /** PostgreSQL only: why the server cannot be reached at all (refused, shut down, cut), else null. */
  databaseUnreachable?: string | null;
  /** Listeners up now, by component name. */
  listeners: ReadonlySet<string>;
  /** Listeners this daemon runs. */
  expectedListeners: readonly string[];
  /** null when a write would succeed now; otherwise why not, its cause first (see writeBlocked). */
  writeBlocked: string | null;
  /** Migrations shipped with this build that the database has not applied. */
  pendingMigrations: number;
  /** Why sending is paused, or null. */
  sendingPaused: string | null;
}

export interface Readiness {
  ready: boolean;
  /** Every reason it is not ready, one line each (empty when ready). */
  reasons: string[];
}

export function judgeReadiness(facts: ReadinessFacts): Readiness {
  const reasons: string[] = [];
  if (facts.databaseUnreachable) reasons.push(`database-unreachable: ${facts.databaseUnreachable}`);
  if (facts.databaseUnanswered) reasons.push(`database not answering: ${facts.databaseUnanswered}`);
  if (facts.writeBlocked) reasons.push(`database not writable: ${facts.writeBlocked}`);
  if (facts.pendingMigrations > 0)
    reasons.push(`database schema behind: ${facts.pendingMigrations} migration(s) not applied`);
  for (const name of facts.expectedListeners) {
    if (!facts.listeners.has(name)) reasons.push(`${name} not listening`);
  }
  if (facts.sendingPaused) reasons.push(`sending paused: ${facts.sendingPaused}`);
  return { ready: reasons.length === 0, reasons };
}

/**
 * Reads the facts /readyz judges, given the listeners up now: SQLite's
 * or PostgreSQL's (./sqliteHealth.ts, ./postgresHealth.ts). Either answers within a bound: it never waits on a lock.
 */
export type ReadinessReader = (
  listeners: ReadonlyMap<string, string>,
) => ReadinessFacts | Promise<ReadinessFacts>;

/** The listeners every daemon runs. */
export const EXPECTED_LISTENERS: readonly string[] = ['api', 'webhook-listener'];
