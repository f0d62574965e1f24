import { run, type Script } from '../store/script.js';
import { raw, sql } from '../store/sql.js';
import type { StateChangeSink } from './effects.js';
import { eventAppliesSql } from './rows.js';
import { stateChanged } from './stateChanged.js';
import type { DecisionRecord } from './storeSeam.js';

/**
 * The operator's decision on an accepted row (accepted -> approved / rejected), written once for
 * both stores: a script run inside the caller's transaction (the inbox records the webhook in the
 * same one). False when the transition table refuses it in the row's state: nothing changes.
 */
export function* recordDecision(d: DecisionRecord, sink: StateChangeSink | undefined): Script<boolean> {
  // approve and reject carry no guard, so the condition holds no parameter of its own.
  const applies = raw(eventAppliesSql(d.decision === 'approved' ? 'approve' : 'reject'));
  const { rowCount } = yield* run(sql`
    UPDATE outbox SET state = ${d.decision}, decision_reason = ${d.reason}, decided_at = ${d.now},
      finished_at = ${d.now}, updated_at = ${d.now}
    WHERE id = ${d.id} AND ${applies}`);
  if (rowCount === 0) return false;
  yield* stateChanged([{ ref: d.ref, from: 'accepted', to: d.decision, at: d.now }], sink);
  return true;
}
