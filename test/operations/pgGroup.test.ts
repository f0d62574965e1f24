import { describe, expect, it } from 'vitest';
import type { ClaimParams } from '../../src/operations/storeSeam.js';
import {
  type ClaimJob,
  claimsByOwner,
  type GroupJob,
  GroupRunner,
  shareClaimed,
} from '../../src/postgres/settleGroup.js';

/** The grouping of the PostgreSQL store's settles and claims, without a database. */

const rows = (...ids: number[]) => ids.map((id) => ({ id }));

describe('shareClaimed', () => {
  it('hands each claim its share, oldest first, in submission order, each up to its limit', () => {
    expect(shareClaimed(rows(7, 3, 5, 9), [1, 2, 4])).toEqual([rows(3), rows(5, 7), rows(9)]);
  });

  it('leaves the later claims short when fewer rows came back, and gives a zero limit nothing', () => {
    expect(shareClaimed(rows(2), [0, 3, 1])).toEqual([[], rows(2), []]);
  });
});

function claimJob(owner: string, limit: number): { job: ClaimJob; params: ClaimParams } {
  const params = { owner, now: 'n', leaseUntil: 'l', limit };
  return { job: { kind: 'claim', given: params, resolve: () => {}, reject: () => {} }, params };
}

describe('claimsByOwner', () => {
  it('groups claims by owner, the owners and their claims in submission order', () => {
    const [a1, b1, a2] = [claimJob('a', 1), claimJob('b', 2), claimJob('a', 3)];
    expect(claimsByOwner([a1, b1, a2])).toEqual([[a1, a2], [b1]]);
  });
});

/** A claim job whose promise reports what it got. */
function tracked(label: string): { job: GroupJob; done: Promise<string> } {
  let job!: GroupJob;
  const done = new Promise<string>((resolve, reject) => {
    job = {
      kind: 'claim',
      given: { owner: 'o', now: 'n', leaseUntil: 'l', limit: 1 },
      resolve: () => resolve(label),
      reject,
    };
  });
  return { job, done };
}

describe('GroupRunner', () => {
  it('runs the jobs of one turn as one group, and those submitted meanwhile as the next', async () => {
    const groups: string[][] = [];
    let release!: () => void;
    const firstHeld = new Promise<void>((resolve) => {
      release = resolve;
    });
    const labels = new Map<GroupJob, string>();
    const runner = new GroupRunner(async (jobs) => {
      groups.push(jobs.map((j) => labels.get(j)!));
      if (groups.length === 1) await firstHeld;
      for (const job of jobs) (job as ClaimJob).resolve([]);
    });
    const submit = (label: string) => {
      const t = tracked(label);
      labels.set(t.job, label);
      runner.submit(t.job);
      return t.done;
    };
    const first = [submit('a'), submit('b')];
    await Promise.resolve();
    // The first group is running (held): these wait for the next one, together.
    const second = [submit('c'), submit('d')];
    release();
    expect(await Promise.all([...first, ...second])).toEqual(['a', 'b', 'c', 'd']);
    expect(groups).toEqual([
      ['a', 'b'],
      ['c', 'd'],
    ]);
  });

  it('fails every job of a group whose flush fails, and runs the next group all the same', async () => {
    let calls = 0;
    const runner = new GroupRunner(async (jobs) => {
      calls++;
      if (calls === 1) throw new Error('connection lost');
      for (const job of jobs) (job as ClaimJob).resolve([]);
    });
    const a = tracked('a');
    const b = tracked('b');
    runner.submit(a.job);
    runner.submit(b.job);
    await expect(a.done).rejects.toThrow('connection lost');
    await expect(b.done).rejects.toThrow('connection lost');
    const c = tracked('c');
    runner.submit(c.job);
    expect(await c.done).toBe('c');
  });
});
