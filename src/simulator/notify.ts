/**
 * Validation of POST /notify bodies, as a strict operator would do it. Part A lists field types but
 * not which are required; the simulator requires the fields any operator needs to act on a report
 * (marketplaceTransactionRef, operationType, transactionAmount) and type-checks every other known
 * field when present (null counts as absent), so a client that sends issuanceId as "123" learns it
 * here rather than in production.
 */
import { z } from 'zod';
import { NOTIFICATION_INTEGER_FIELDS, NOTIFICATION_STRING_FIELDS } from '../operator/fields.js';
import type { OperationKind } from '../outbox/operationTypes.js';

/**
 * The operationType spellings the operator documents, lowercased (compared in any case): Part A's
 * names, and the legacy postTransfer and postRetirement of its public documentation. Narrower than
 * what the daemon accepts as input (`retirement` is the daemon's own alias): an unknown spelling
 * sent on the wire is refused here with a 422, as a strict operator would.
 */
const OPERATION_SPELLINGS: Readonly<Record<string, OperationKind>> = {
  tokenization: 'tokenization',
  transfer: 'transfer',
  posttransfer: 'transfer',
  retire: 'retire',
  postretirement: 'retire',
  detokenization: 'detokenization',
};

/** The operation kind a documented spelling names (any case), or undefined. */
export function operationKindOf(operationType: unknown): OperationKind | undefined {
  return typeof operationType === 'string' ? OPERATION_SPELLINGS[operationType.toLowerCase()] : undefined;
}

export const TRANSACTION_UNITS = ['tCO2e', 'kgCO2e'] as const;

// The operator's own field list: the simulator plays the operator, so it reads the interface from the same place.
const STRING_FIELDS = NOTIFICATION_STRING_FIELDS;
const INTEGER_FIELDS = NOTIFICATION_INTEGER_FIELDS;

const optional = <T extends z.ZodType>(t: T) => t.nullish();

const shape: Record<string, z.ZodType> = {
  marketplaceTransactionRef: z.string('must be a string').trim().min(1, 'must not be empty'),
  operationType: z.string('must be a string').refine((s) => operationKindOf(s) !== undefined, {
    message:
      'must be one of Tokenization, Transfer, Retire, Detokenization (or postTransfer, postRetirement)',
  }),
  transactionAmount: z.number('must be a number').finite().positive('must be positive'),
  transactionUnit: optional(z.enum(TRANSACTION_UNITS, 'must be tCO2e or kgCO2e')),
  transactionTimestamp: optional(z.iso.datetime({ message: 'must be an ISO 8601 date-time', offset: true })),
};
for (const f of STRING_FIELDS) shape[f] = optional(z.string('must be a string'));
for (const f of INTEGER_FIELDS) shape[f] = optional(z.number('must be an integer').int('must be an integer'));

/** Unknown fields are accepted (loose): an operator ignores what it does not know. */
const notificationSchema = z.looseObject(shape).superRefine((n, ctx) => {
  if (operationKindOf(n.operationType) !== 'detokenization') return;
  const dest = n.unitsAccountDestinationID;
  if (typeof dest !== 'number' || !Number.isInteger(dest)) {
    ctx.addIssue({
      code: 'custom',
      path: ['unitsAccountDestinationID'],
      message: 'is required for Detokenization',
    });
  }
  const amount = n.transactionAmount;
  if (typeof amount === 'number' && !Number.isInteger(amount)) {
    ctx.addIssue({
      code: 'custom',
      path: ['transactionAmount'],
      message: 'must be whole tCO2e for Detokenization',
    });
  }
  if (n.transactionUnit != null && n.transactionUnit !== 'tCO2e') {
    ctx.addIssue({ code: 'custom', path: ['transactionUnit'], message: 'must be tCO2e for Detokenization' });
  }
});

export interface FieldError {
  field: string;
  message: string;
}

export type NotifyCheck =
  | { ok: true; body: Record<string, unknown> }
  | { ok: false; status: 400 | 422; message: string; errors?: FieldError[] };

/** Parses and validates a raw /notify body. */
export function checkNotification(raw: string): NotifyCheck {
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    return { ok: false, status: 400, message: 'request body is not valid JSON' };
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    return { ok: false, status: 400, message: 'request body must be a JSON object' };
  }
  const result = notificationSchema.safeParse(parsed);
  if (!result.success) {
    const errors = result.error.issues.map((i) => ({
      field: i.path.map(String).join('.') || '(body)',
      message: i.code === 'invalid_type' && parsedLacks(parsed, i.path[0]) ? 'is required' : i.message,
    }));
    return { ok: false, status: 422, message: 'notification is invalid', errors };
  }
  return { ok: true, body: parsed as Record<string, unknown> };
}

function parsedLacks(obj: object, key: PropertyKey | undefined): boolean {
  return typeof key === 'string' && !(key in obj);
}
