import { describe, expect, it } from 'vitest';
import { exitCodeOf, judge, type RuleInputs } from '../../src/health/rules.js';
import { NO_FAULTS, unreadableSnapshot } from '../../src/health/snapshot.js';

/**
 * The `database-unreachable` rule (issue 25): a PostgreSQL server that cannot be reached is a
 * critical problem of its own (exit 2), dated when the replica knows since when; an unreadable
 * database stays `database-unreadable`, and a reachable one raises neither.
 */

const NOW = Date.parse('2026-03-02T12:00:00.000Z');
const INPUTS: RuleInputs = {
  now: NOW,
  periods: {},
  stalePeriods: 3,
  decisionWarnHours: 24,
  decisionWarnCount: 100,
};

describe('database-unreachable', () => {
  it('critical, with how long and pg’s words, and the rest of the health unknown rather than zero', () => {
    const snapshot = unreadableSnapshot({
      ...NO_FAULTS,
      unreachable: {
        reason: 'connect ECONNREFUSED 10.0.0.5:5432',
        since: new Date(NOW - 90_000).toISOString(),
      },
    });
    const { status, problems } = judge(snapshot, INPUTS);
    expect(status).toBe('critical');
    expect(exitCodeOf(status)).toBe(2);
    expect(problems.map((p) => [p.code, p.severity])).toEqual([['database-unreachable', 'critical']]);
    expect(problems[0]?.message).toContain('for 90s');
    expect(problems[0]?.message).toContain('connect ECONNREFUSED 10.0.0.5:5432');
    expect(problems[0]?.action).toMatch(/no restart needed/);
  });

  it('undated when the process asking does not know since when (vcu-sync status)', () => {
    const snapshot = unreadableSnapshot({ ...NO_FAULTS, unreachable: { reason: 'refused', since: null } });
    const [problem] = judge(snapshot, INPUTS).problems;
    expect(problem?.message).toMatch(/^PostgreSQL cannot be reached: refused;/);
  });

  it('not raised for an unreadable database, nor for a healthy one', () => {
    const unreadable = judge(unreadableSnapshot({ ...NO_FAULTS, readError: 'permission denied' }), INPUTS);
    expect(unreadable.problems.map((p) => p.code)).toEqual(['database-unreadable']);
    const healthy = judge(unreadableSnapshot({ ...NO_FAULTS }), INPUTS);
    expect(healthy.problems.map((p) => p.code)).not.toContain('database-unreachable');
  });
});
