import { PERSONAL_FIELDS, REDACTED } from '../redact.js';

/**
 * Personal values of one notification, so text that might quote them (an operator's error message
 * echoing the body) can be masked before it is stored or logged.
 */
export function personalValues(body: Record<string, unknown>): string[] {
  return PERSONAL_FIELDS.map((f) => body[f]).filter(
    (v): v is string => typeof v === 'string' && v.length >= 3,
  );
}

/** `text` with each of `values` replaced by the redaction mark. */
export function maskValues(text: string, values: readonly string[]): string {
  let out = text;
  for (const v of values) if (out.includes(v)) out = out.split(v).join(REDACTED);
  return out;
}

/** A copy of a notification with its personal fields masked, for printing and the read API. */
export function maskPersonal(body: Record<string, unknown>): Record<string, unknown> {
  const out = { ...body };
  for (const f of PERSONAL_FIELDS) if (out[f] !== undefined && out[f] !== null) out[f] = REDACTED;
  return out;
}
