import { OPERATION_STATES, type OperationState, UNSENT_STATES } from '../db/schema/operationStates.js';

/**
 * The life of one queued operation (an `outbox` row): its states, the events that move it, and
 * which moves are allowed. Pure: no I/O. The statements in `store.ts` take their `WHERE state ...`
 * conditions from this table, so a move the table refuses cannot happen in the database either.
 *
 * ```
 *               ┌──── requeue, release ─────┐
 *               ▼                           │
 *  enqueue ─▶ queued ──── claim (due) ──▶ sending ── accept ──▶ accepted ── approve ──▶ approved
 *             │  ▲ ↺ expedite             │  ↺ claim (lease expired)  └────── reject ──▶ rejected
 *             │  └─────── retry ──────┐   │ fail
 *             │                       │   ▼
 *             │ cancel                failed
 *             ▼                           │ cancel
 *         cancelled ◀─────────────────────┘      (and sending ── cancel (lease expired) ──▶ cancelled)
 * ```
 *
 * approved, rejected, failed and cancelled are final for the operator's side (a failed row may
 * still be retried or closed as cancelled by a person); scrubbing personal fields changes no state.
 */

// The one list of states is the outbox table's column type (db/schema/operationStates.ts): the
// schema sits below this table of transitions, and must not import it.
export { OPERATION_STATES, type OperationState, UNSENT_STATES };

/** States after which nothing more is sent or decided (personal fields are scrubbed from these). */
export const FINISHED_STATES: readonly OperationState[] = ['approved', 'rejected', 'failed', 'cancelled'];

/** Whether a text names a state. */
export function isOperationState(value: string): value is OperationState {
  return (OPERATION_STATES as readonly string[]).includes(value);
}

/** What can happen to an operation row (enqueue creates it, in `queued`). */
export const OPERATION_EVENTS = [
  /** The dispatcher takes the row to send it, under a lease. */
  'claim',
  /** The operator answered 2xx. */
  'accept',
  /** A retryable failure (or a 401/403 refusal): back to the queue with a next attempt time. */
  'requeue',
  /** A permanent failure, or attempts / age ran out. */
  'fail',
  /** The dispatcher hands a claimed row back unsent (graceful stop, or start-up after a crash). */
  'release',
  /** The operator's webhook approved it. */
  'approve',
  /** The operator's webhook rejected it. */
  'reject',
  /** A person sends a failed row again (attempts reset). */
  'retry',
  /** A person makes a queued row waiting out its backoff due now. */
  'expedite',
  /** A person withdraws a row the operator has not accepted. */
  'cancel',
] as const;

export type OperationEvent = (typeof OPERATION_EVENTS)[number];

/**
 * A condition on the row besides its state: `due` (its next attempt time has come),
 * `lease-expired` (its claimant's lease ran out: the claimant is presumed dead), `own-lease` (the
 * one moving it is the claimant whose lease still stands).
 */
export type Guard = 'due' | 'lease-expired' | 'own-lease';

/** One allowed move: the state it leads to, and the condition it needs besides the state. */
export interface Move {
  to: OperationState;
  when?: Guard;
}

/** The transition table: event → from-state → move. A from-state not listed refuses the event. */
export const TRANSITIONS: Readonly<Record<OperationEvent, Readonly<Partial<Record<OperationState, Move>>>>> =
  {
    claim: {
      queued: { to: 'sending', when: 'due' },
      sending: { to: 'sending', when: 'lease-expired' },
    },
    accept: { sending: { to: 'accepted', when: 'own-lease' } },
    requeue: { sending: { to: 'queued', when: 'own-lease' } },
    fail: { sending: { to: 'failed', when: 'own-lease' } },
    // The start-up hand-back releases every claim without a guard: the one daemon owning the
    // SQLite file knows every claimant it finds there is dead (see `releaseAllClaims`).
    release: { sending: { to: 'queued', when: 'own-lease' } },
    approve: { accepted: { to: 'approved' } },
    reject: { accepted: { to: 'rejected' } },
    retry: { failed: { to: 'queued' } },
    expedite: { queued: { to: 'queued' } },
    cancel: {
      queued: { to: 'cancelled' },
      failed: { to: 'cancelled' },
      sending: { to: 'cancelled', when: 'lease-expired' },
    },
  };

/** The facts about a row that guards look at; a guard whose fact is not given does not hold. */
export interface GuardFacts {
  due?: boolean;
  leaseExpired?: boolean;
  ownLease?: boolean;
}

/** What the table says about one event on a row in one state. */
export type Verdict =
  | { ok: true; to: OperationState }
  /** `not-allowed`: the event never applies in this state; `guard`: it would, but the condition does not hold. */
  | { ok: false; why: 'not-allowed' }
  | { ok: false; why: 'guard'; guard: Guard };

/** The fact each guard looks at. */
const FACT_OF: Record<Guard, keyof GuardFacts> = {
  due: 'due',
  'lease-expired': 'leaseExpired',
  'own-lease': 'ownLease',
};

/** The state `event` moves a row in state `from` to, or why it may not. */
export function nextState(from: OperationState, event: OperationEvent, facts: GuardFacts = {}): Verdict {
  const move = TRANSITIONS[event][from];
  if (!move) return { ok: false, why: 'not-allowed' };
  if (move.when && facts[FACT_OF[move.when]] !== true) return { ok: false, why: 'guard', guard: move.when };
  return { ok: true, to: move.to };
}

/** The states `event` applies to (with their guards), in the order of {@link OPERATION_STATES}. */
export function fromStates(event: OperationEvent): Array<{ from: OperationState } & Move> {
  return OPERATION_STATES.flatMap((from) => {
    const move = TRANSITIONS[event][from];
    return move ? [{ from, ...move }] : [];
  });
}

/** Whether some event moves `from` to `to` (a state change the table allows). */
export function canMove(from: OperationState, to: OperationState): boolean {
  return OPERATION_EVENTS.some((event) => TRANSITIONS[event][from]?.to === to);
}
