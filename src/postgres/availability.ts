import type { Clock } from '../common/clock.js';
import { errorMessage } from '../common/errors.js';
import { scrubText } from '../common/redact.js';
import { NETWORK_CODES } from './faults.js';

/**
 * Whether PostgreSQL can be reached now, as this process last saw it: fed by every attempt to open
 * a connection (the pool's, the LISTEN's, the liveness session's) and every pooled connection
 * handed back sound. An attempt that fails because the server cannot be reached (refused, reset,
 * shutting down, starting up, timed out) makes it unreachable; the next connection that opens or
 * answers makes it reachable again. A connection that breaks
 * is not by itself an outage (one backend may be ended on its own): the next attempt decides.
 * A server that refuses for want of free connection slots (53300) is reachable: this process goes
 * on with the connections it holds.
 *
 * A pure decider ({@link observeAvailability}) and a thin edge ({@link PgAvailability}) that keeps
 * the state and says when it changes, so the logs say "gone" once and "back" once per outage.
 */

/** The state the decider keeps. */
export type AvailabilityState =
  | { up: true; since: number }
  | { up: false; since: number; reason: string; failures: number };

/** What was seen: a connection opened, or an attempt failed for `reason` (null: not an outage). */
export type AvailabilityObservation =
  | { kind: 'connected'; at: number }
  /** A pooled connection did its work and was handed back sound; it was taken at `takenAt`. */
  | { kind: 'answered'; at: number; takenAt: number }
  | { kind: 'failed'; at: number; reason: string | null };

/** A change worth telling: the database went away, or came back after `downMs`. */
export type AvailabilityChange =
  | { kind: 'unreachable'; reason: string; at: number }
  | { kind: 'reachable'; downMs: number; failures: number; at: number };

/** The state after `observation`, and the change it makes (null when it changes nothing worth a line). */
export function observeAvailability(
  state: AvailabilityState,
  observation: AvailabilityObservation,
): { state: AvailabilityState; change: AvailabilityChange | null } {
  if (observation.kind === 'answered') {
    // Only work begun after the outage did proves the server back: a connection taken before may
    // have finished on the server's last words (57P01) before its socket closed.
    if (state.up || observation.takenAt < state.since) return { state, change: null };
    return observeAvailability(state, { kind: 'connected', at: observation.at });
  }
  if (observation.kind === 'connected') {
    if (state.up) return { state, change: null };
    return {
      state: { up: true, since: observation.at },
      change: {
        kind: 'reachable',
        downMs: Math.max(0, observation.at - state.since),
        failures: state.failures,
        at: observation.at,
      },
    };
  }
  if (observation.reason === null) return { state, change: null };
  if (!state.up) return { state: { ...state, failures: state.failures + 1 }, change: null };
  return {
    state: { up: false, since: observation.at, reason: observation.reason, failures: 1 },
    change: { kind: 'unreachable', reason: observation.reason, at: observation.at },
  };
}

/** SQLSTATEs of a server that is there but not taking this session: shutting down, starting up. */
const UNREACHABLE_STATES = ['57P01', '57P02', '57P03'];

/**
 * Why a failed connection attempt means the server cannot be reached, or null when it does not
 * (a wrong password, no free connection slot, the pool's own queue timing out): one line, no secrets.
 */
export function unreachableReason(err: unknown): string | null {
  if (!(err instanceof Error)) return null;
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string') {
    if (code.startsWith('08') || UNREACHABLE_STATES.includes(code) || NETWORK_CODES.has(code))
      return errorLine(err);
    return null;
  }
  // pg's own words for a connection cut while opening, or that timed out (connectionTimeoutMillis).
  return /Connection terminated/i.test(err.message) ? errorLine(err) : null;
}

/** The server's words, one line, no secrets (pg's messages name no password; scrubbed anyway). */
export function errorLine(err: unknown): string {
  return scrubText(errorMessage(err).split('\n')[0] ?? '') || 'unknown error';
}

/** The edge: the state, the clock, and who hears of a change. */
export class PgAvailability {
  private state: AvailabilityState;
  private readonly listeners: Array<(change: AvailabilityChange) => void> = [];

  constructor(private readonly clock: Clock) {
    this.state = { up: true, since: clock.now() };
  }

  /** A connection opened: the server is there. */
  noteConnected(): void {
    this.apply({ kind: 'connected', at: this.clock.now() });
  }

  /** A pooled connection taken at `takenAt` ({@link now}) did its work and came back sound. */
  noteAnswered(takenAt: number): void {
    this.apply({ kind: 'answered', at: this.clock.now(), takenAt });
  }

  /** The tracker's time, for {@link noteAnswered}. */
  now(): number {
    return this.clock.now();
  }

  /** A connection attempt failed with `err`. */
  noteConnectFailed(err: unknown): void {
    this.apply({ kind: 'failed', at: this.clock.now(), reason: unreachableReason(err) });
  }

  /** Calls `listener` on each change from now on. */
  onChange(listener: (change: AvailabilityChange) => void): void {
    this.listeners.push(listener);
  }

  /** Whether the server was reachable at the last attempt. */
  reachable(): boolean {
    return this.state.up;
  }

  /** Since when, and why, the server cannot be reached (null while it can). */
  outage(): { since: number; reason: string } | null {
    return this.state.up ? null : { since: this.state.since, reason: this.state.reason };
  }

  private apply(observation: AvailabilityObservation): void {
    const { state, change } = observeAvailability(this.state, observation);
    this.state = state;
    if (change) for (const listener of this.listeners) listener(change);
  }
}
