import { z } from 'zod';
import { didYouMean } from '../common/didYouMean.js';
import { NOTIFICATION_INTEGER_FIELDS, NOTIFICATION_STRING_FIELDS } from '../operator/fields.js';
import { type OperationKind, parseOperationKind } from './operationTypes.js';
import { normalizeTimestamp } from './timestamp.js';

/**
 * Validation of a notification an internal app wants sent (interface 2.1), per operation type.
 * Pure: input in, a normalized notification or every field error out. Messages name the field and
 * the reason but never quote the value (it may be personal data).
 */

/** One problem with one field of the input. */
export interface FieldError {
  /** The field's name as the interface spells it (or "(body)" for the whole input). */
  field: string;
  /** Why it was refused, in words a person can act on. */
  reason: string;
}

/** A notification that passed validation, ready to be queued. */
export interface ValidOperation {
  kind: OperationKind;
  ref: string;
  /** The notification with normalized values and `operationType` still the kind (not yet the wire spelling). */
  notification: Record<string, unknown>;
  /** Operations with the same key leave in queue order: `unit:<unitId>`, else `issuance:<issuanceId>`, else null. */
  orderKey: string | null;
}

export type Validation = { ok: true; operation: ValidOperation } | { ok: false; errors: FieldError[] };

/** What validation fills in when the input leaves it out. */
export interface ValidationDefaults {
  /** `marketplaceId` when the input has none (default: none, then it is required). */
  marketplaceId?: string | undefined;
}

export const STRING_FIELDS = NOTIFICATION_STRING_FIELDS;
export const INTEGER_FIELDS = NOTIFICATION_INTEGER_FIELDS;

/** Every field of the Notification (2.1). */
export const NOTIFICATION_FIELDS: readonly string[] = [
  'operationType',
  'marketplaceTransactionRef',
  'transactionAmount',
  'transactionUnit',
  'transactionTimestamp',
  ...STRING_FIELDS,
  ...INTEGER_FIELDS,
];

const ORIGIN_FIELDS = ['originWallet', 'originUserName', 'originUserEmail', 'originUserDocId'] as const;
const DESTINATION_FIELDS = [
  'destinationWallet',
  'destinationUserName',
  'destinationUserEmail',
  'destinationUserDocId',
];

const text = z.string({ error: 'must be a string' });
/** An id as text: plain decimal digits, no sign, spaces or leading zeros ("007" is not 7 to every reader). */
const DIGITS = /^(0|[1-9]\d{0,14})$/;
// Ids arrive as numbers or digit strings from apps that keep them as text; both mean the same id.
// Any other string is refused by name rather than read leniently: " 5" and "007" are someone's bug.
const integer = z.preprocess(
  (v, ctx) => {
    if (typeof v !== 'string') return v;
    if (DIGITS.test(v)) return Number(v);
    ctx.addIssue({
      code: 'custom',
      message: 'must be an integer: a number, or plain decimal digits without spaces, sign or leading zeros',
    });
    return z.NEVER;
  },
  z
    .number({ error: 'must be an integer' })
    .int({ error: 'must be an integer' })
    .min(0, { error: 'must not be negative' })
    .max(Number.MAX_SAFE_INTEGER, { error: 'is too large' }),
);

const shape: Record<string, z.ZodType> = {
  // Open on input by contract (any case, legacy names): documented as a string with examples (on the
  // input side of the transform: zod leaves a transform's own examples out of input schemas).
  operationType: text
    .meta({ examples: ['Tokenization', 'Transfer', 'Retire', 'Detokenization'] })
    .transform((v, ctx) => {
      const kind = parseOperationKind(v);
      if (kind) return kind;
      ctx.addIssue({
        code: 'custom',
        message:
          'must be Tokenization, Transfer, Retire or Detokenization (any case; postTransfer and postRetirement too)',
      });
      return z.NEVER;
    })
    .describe(
      'Tokenization, Transfer, Retire or Detokenization, in any case; the older postTransfer and postRetirement are accepted too',
    ),
  marketplaceTransactionRef: text
    .trim()
    .min(1, { error: 'must not be empty' })
    .max(200, { error: 'must be at most 200 characters' })
    .regex(/^[\x21-\x7e]+$/, { error: 'must be printable ASCII without spaces' }),
  transactionAmount: z
    .number({ error: 'must be a number' })
    .refine(Number.isFinite, { error: 'must be a finite number' })
    .refine((v) => v > 0, { error: 'must be positive' })
    .meta({ exclusiveMinimum: 0 }),
  transactionUnit: text
    .transform((v, ctx) => {
      const unit = { tco2e: 'tCO2e', kgco2e: 'kgCO2e' }[v.trim().toLowerCase()];
      if (unit) return unit;
      ctx.addIssue({ code: 'custom', message: 'must be tCO2e or kgCO2e' });
      return z.NEVER;
    })
    // Any case is accepted, but these are the interface's only two values: clients get a closed type.
    .meta({ enum: ['tCO2e', 'kgCO2e'], description: 'tCO2e or kgCO2e (any case is accepted)' }),
  transactionTimestamp: text
    .transform((v, ctx) => {
      const iso = normalizeTimestamp(v);
      if (iso) return iso;
      ctx.addIssue({
        code: 'custom',
        message: 'must be an ISO 8601 date-time with a time zone, e.g. 2026-01-31T12:00:00.000Z',
      });
      return z.NEVER;
    })
    .meta({ format: 'date-time' }),
  // Optional here: validateNotification fills it from operator.marketplace_id, and requires it when unset.
  marketplaceId: text
    .trim()
    .min(1, { error: 'must not be empty' })
    .optional()
    .describe(
      "this marketplace's id at the operator (default: operator.marketplace_id; required when that is not set)",
    ),
};
for (const f of STRING_FIELDS) shape[f] ??= text.optional();
for (const f of INTEGER_FIELDS) shape[f] = integer.optional();

/** The Notification (2.1) as accepted from internal apps; also the request body in /openapi.json. */
export const notificationSchema = z.strictObject(shape).meta({ id: 'Notification' });

function present(n: Record<string, unknown>, field: string): boolean {
  const v = n[field];
  return v !== undefined && v !== '';
}

/** Whole tonnes and the kilograms left over, for the Detokenization rule (Part B). */
export function wholeTonnes(amount: number, unit: string): { tonnes: number; remainderKg: number } {
  // Work in integer grams so 0.1 + 0.2 style errors cannot move a tonne boundary.
  const grams = Math.round(amount * (unit === 'kgCO2e' ? 1_000 : 1_000_000));
  const tonnes = Math.floor(grams / 1_000_000);
  return { tonnes, remainderKg: (grams - tonnes * 1_000_000) / 1_000 };
}

/** Rules that depend on the operation type, on an input whose fields are each already valid. */
function kindErrors(kind: OperationKind, n: Record<string, unknown>): FieldError[] {
  const errors: FieldError[] = [];
  if (kind === 'transfer') {
    if (!ORIGIN_FIELDS.some((f) => present(n, f))) {
      errors.push({
        field: 'originWallet',
        reason: 'Transfer needs an origin: originWallet or an origin user',
      });
    }
    if (!DESTINATION_FIELDS.some((f) => present(n, f))) {
      errors.push({
        field: 'destinationWallet',
        reason: 'Transfer needs a destination: destinationWallet or a destination user',
      });
    }
  }
  if (kind !== 'retire' && present(n, 'unitsRetirementNotes')) {
    errors.push({
      field: 'unitsRetirementNotes',
      reason: 'only a Retire operation carries retirement notes',
    });
  }
  if (kind === 'detokenization') {
    if (n.unitsAccountDestinationID === undefined) {
      errors.push({
        field: 'unitsAccountDestinationID',
        reason: 'is required for Detokenization (the operator account that receives the units)',
      });
    }
    const amount = n.transactionAmount as number;
    const unit = n.transactionUnit as string;
    if (unit !== 'tCO2e' || !Number.isInteger(amount)) {
      const { tonnes, remainderKg } = wholeTonnes(amount, unit);
      const advice =
        tonnes === 0
          ? `less than one whole tonne: nothing can be detokenized; ${remainderKg} kgCO2e stay on the marketplace`
          : `send transactionAmount ${tonnes} with transactionUnit tCO2e; the remaining ${remainderKg} kgCO2e stay on the marketplace`;
      errors.push({
        field: 'transactionAmount',
        reason: `Detokenization re-tokenizes whole tCO2e only: ${advice}`,
      });
    }
  }
  return errors;
}

/** "unknown field", with the field it most likely meant when one is close (a typo). */
function unknownFieldReason(key: string): string {
  return `unknown field, not part of the interface's Notification${didYouMean(key, NOTIFICATION_FIELDS)}`;
}

function toFieldErrors(issues: readonly z.core.$ZodIssue[], input: Record<string, unknown>): FieldError[] {
  return issues.flatMap((issue) => {
    if (issue.code === 'unrecognized_keys')
      return issue.keys.map((k) => ({ field: k, reason: unknownFieldReason(k) }));
    const field = issue.path.map(String).join('.') || '(body)';
    const missing = issue.code === 'invalid_type' && input[String(issue.path[0])] === undefined;
    return [{ field, reason: missing ? 'is required' : issue.message }];
  });
}

/** Validates and normalizes one notification; every problem is listed, not just the first. */
export function validateNotification(input: unknown, defaults: ValidationDefaults = {}): Validation {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    return { ok: false, errors: [{ field: '(body)', reason: 'must be a JSON object' }] };
  }
  // null means "not given": it is neither sent nor counted as a value. Copied as own data properties
  // (Object.fromEntries, not assignment): assigning a "__proto__" key from JSON would set the copy's
  // prototype, and its contents would be read as fields while no unknown key shows.
  const cleaned: Record<string, unknown> = Object.fromEntries(
    Object.entries(input).filter(([, v]) => v !== null),
  );
  if (cleaned.marketplaceId === undefined && defaults.marketplaceId)
    cleaned.marketplaceId = defaults.marketplaceId;

  const noMarketplace: FieldError[] =
    cleaned.marketplaceId === undefined
      ? [{ field: 'marketplaceId', reason: 'is required (or set operator.marketplace_id)' }]
      : [];
  const parsed = notificationSchema.safeParse(cleaned);
  if (!parsed.success)
    return { ok: false, errors: [...toFieldErrors(parsed.error.issues, cleaned), ...noMarketplace] };
  const notification = parsed.data as Record<string, unknown>;
  const kind = notification.operationType as OperationKind;
  const errors = [...kindErrors(kind, notification), ...noMarketplace];
  if (errors.length > 0) return { ok: false, errors };

  for (const [k, v] of Object.entries(notification)) if (v === undefined) delete notification[k];
  const orderKey =
    notification.unitId !== undefined
      ? `unit:${notification.unitId}`
      : notification.issuanceId !== undefined
        ? `issuance:${notification.issuanceId}`
        : null;
  return {
    ok: true,
    operation: { kind, ref: notification.marketplaceTransactionRef as string, notification, orderKey },
  };
}
