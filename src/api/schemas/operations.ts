import { z } from 'zod';
import type { Config } from '../../config/config.js';
import { OPERATION_STATES } from '../../operations/states.js';
import { ATTEMPT_ALIASES, OPERATION_ALIASES, type OutboxEntry } from '../../outbox/entry.js';
import type { OperationPage } from '../../outbox/manage.js';
import { OPERATION_KINDS } from '../../outbox/operationTypes.js';
import { errorBody, instant, withDeprecatedAliases } from './common.js';

/**
 * The outbox as the API shows it (outbox/entry.ts toEntry, outbox/manage.ts), as zod. The handlers'
 * TypeScript types must fit these schemas: the checks at the end of this file fail the typecheck
 * when a field is renamed or retyped without the document following.
 */

/** The seven states of an operation; closed. */
export const outboxState = z
  .enum(OPERATION_STATES)
  .describe(
    'queued (waiting to be sent), sending, accepted (the operator took it; a decision comes later), approved, rejected, failed (not delivered), cancelled',
  )
  .meta({ id: 'OperationState' });

/** One delivery attempt (outbox/queries.ts AttemptRow). */
const attempt = z
  .object(
    withDeprecatedAliases(
      {
        id: z.number().int(),
        outbox_id: z.number().int(),
        started_at: instant,
        duration_ms: z.number().int(),
        status_code: z
          .number()
          .int()
          .nullable()
          .describe("the operator's HTTP status; null when none came back"),
        error: z.string().nullable(),
      },
      ATTEMPT_ALIASES,
    ),
  )
  .meta({ id: 'Attempt' });

const text = z.string().nullable();

/**
 * A stored operation. `operationType` is the spelling sent to the operator: one of this daemon's
 * `outbox.wire_spelling` values, so the document is built from the configuration.
 */
export function outboxEntrySchema(wire: Config['outbox']['wire_spelling']) {
  const spellings = [...new Set(OPERATION_KINDS.map((k) => wire[k]))] as [string, ...string[]];
  return z
    .object(
      withDeprecatedAliases(
        {
          id: z.number().int().describe('position in the queue'),
          marketplaceTransactionRef: z.string(),
          operationType: z
            .enum(spellings)
            .describe(
              'the spelling sent to the operator (outbox.wire_spelling of this daemon; an operation queued under an earlier setting keeps the spelling it was sent with)',
            )
            .meta({ id: 'OperationTypeSent' }),
          order_key: text.describe(
            'operations with the same key (unit:<id> or issuance:<id>) leave in queue order',
          ),
          body: z
            .record(z.string(), z.unknown())
            .describe('the notification exactly as sent to the operator, personal fields masked'),
          body_hash: z.string(),
          state: outboxState,
          attempts: z.number().int(),
          next_attempt_at: instant,
          lease_owner: text,
          lease_until: instant.nullable(),
          last_error: text.describe('why the last attempt failed (masked)'),
          last_status: z.number().int().nullable(),
          response: z.unknown().describe("the operator's answer to the accepted attempt (masked), or null"),
          decision_reason: text.describe(
            "the operator's reason, with a rejection (or an approval that gave one)",
          ),
          created_at: instant,
          updated_at: instant,
          accepted_at: instant.nullable(),
          decided_at: instant.nullable().describe('when the approval or rejection arrived'),
          finished_at: instant.nullable(),
          scrubbed_at: instant.nullable().describe('when its personal fields were scrubbed'),
          retried_at: instant.nullable(),
          attempt_log: z
            .array(attempt)
            .optional()
            .describe('every delivery attempt: GET /v1/operations/{ref} only'),
        },
        [...OPERATION_ALIASES, 'attempt_log'],
      ),
    )
    .meta({ id: 'Operation' });
}

/** The schemas of the operations routes, for one configuration. */
export function operationSchemas(wire: Config['outbox']['wire_spelling']) {
  const entry = outboxEntrySchema(wire);
  return {
    entry,
    page: z
      .object({
        items: z.array(entry),
        nextCursor: z
          .string()
          .nullable()
          .describe('pass as `cursor` for the next page; null on the last one'),
      })
      .meta({ id: 'OperationPage' }),
    /** 409 on POST /v1/operations: the ref holds another body; the stored entry comes with it. */
    conflict: errorBody.extend({ entry }).meta({ id: 'OperationConflict' }),
  };
}

// The values the handlers return must fit the schemas (a value may carry more fields than shown; a
// test checks that none does). `body` is typed unknown in toEntry (it parses stored text), but enqueue
// only ever stores a JSON object, so the document promises an object.
type Schemas = ReturnType<typeof operationSchemas>;
type Shown = Omit<z.output<Schemas['entry']>, 'body'>;
type Fits<Value extends Schema, Schema> = Value;
export type CheckedEntry = Fits<Omit<OutboxEntry, 'body'>, Shown>;
export type CheckedPage = Fits<Omit<OperationPage, 'items'>, Omit<z.output<Schemas['page']>, 'items'>>;
export type CheckedPageItem = Fits<Omit<OperationPage['items'][number], 'body'>, Shown>;
