/** Where time comes from, so tests can move it instead of sleeping. */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

/** ISO 8601 with milliseconds and `Z`, the one timestamp format stored in the database. */
export function isoAt(ms: number): string {
  return new Date(ms).toISOString();
}

/** A clock tests can set and advance. */
export class ManualClock implements Clock {
  constructor(private ms: number = Date.parse('2026-01-01T00:00:00.000Z')) {}
  now(): number {
    return this.ms;
  }
  advance(ms: number): void {
    this.ms += ms;
  }
  set(ms: number): void {
    this.ms = ms;
  }
}

/**
 * setTimeout that an abort of any of `signals` ends early and clears, so a stopping process is not
 * kept alive by it (and a retry can be called forward).
 */
export function cancellableSleep(ms: number, ...signals: Array<AbortSignal | undefined>): Promise<void> {
  const live = signals.filter((s): s is AbortSignal => s !== undefined);
  if (live.some((s) => s.aborted)) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      for (const s of live) s.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    for (const s of live) s.addEventListener('abort', done, { once: true });
  });
}

/** Runs `fn` after `ms`; returns its cancel. Injected so tests end a wait without waiting. */
export type Schedule = (ms: number, fn: () => void) => () => void;

/** The real timers. */
export const realSchedule: Schedule = (ms, fn) => {
  const timer = setTimeout(fn, ms);
  return () => clearTimeout(timer);
};

/**
 * Whether `task` settles (resolves or rejects) within `ms`; the timer is cleared either way. The
 * caller awaits `task` itself for its value or error.
 */
export async function finishedWithin(task: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([task.then(finished, finished), late]);
  } finally {
    clearTimeout(timer);
  }
}

const finished = () => true as const;

/** Whether `value` (YYYY-MM-DD) names a day of the calendar: 2023-02-29 and 2023-13-45 do not. */
export function isCalendarDay(value: string): boolean {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(value);
  if (!m) return false;
  const [y, mo, d] = [Number(m[1]), Number(m[2]), Number(m[3])];
  const date = new Date(Date.UTC(y, mo - 1, d));
  return date.getUTCFullYear() === y && date.getUTCMonth() === mo - 1 && date.getUTCDate() === d;
}
