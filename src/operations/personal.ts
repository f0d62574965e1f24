import {
  isPersonalKey,
  isSensitiveKey,
  maskDeep,
  PERSONAL_FIELDS,
  REDACTED,
  scrubText,
} from '../common/redact.js';
import { textForms, textMasker } from '../common/textForms.js';

/**
 * Personal values per operation. Which keys are personal is decided in `redact.ts`; here an
 * operation's own values are collected from its body so that text quoting them (an operator's
 * answer or error echoing the body, a webhook reason naming the user) is masked before it is
 * stored, logged or served.
 */

/** Masks text. */
export type Masker = (text: string) => string;

/** Personal values of one notification (strings and numbers of its personal fields). */
export function personalValues(body: Record<string, unknown>): string[] {
  const values: string[] = [];
  for (const f of PERSONAL_FIELDS) {
    const v = body[f];
    if ((typeof v === 'string' || typeof v === 'number') && String(v).length >= 3) values.push(String(v));
  }
  return values;
}

/** The personal values of a stored body (none when it is not a JSON object). */
export function personalValuesOf(bodyText: string | null | undefined): string[] {
  if (!bodyText) return [];
  try {
    const body: unknown = JSON.parse(bodyText);
    return body && typeof body === 'object' && !Array.isArray(body)
      ? personalValues(body as Record<string, unknown>)
      : [];
  } catch {
    return [];
  }
}

/**
 * Masks each of `values` in every form it may take in text (raw, JSON-escaped, URL-encoded,
 * HTML-escaped, any letter case), and registered secrets with them.
 */
export function personalMasker(values: readonly string[]): Masker {
  // Built on first use: most rows shown or settled have no text to mask.
  let mask: Masker | undefined;
  return (text) => {
    if (text === '') return text;
    mask ??= textMasker(values.flatMap(textForms), REDACTED, true);
    return scrubText(mask(text));
  };
}

/**
 * Text received from outside (an operator's answer or error body, a webhook body) as it may be
 * stored: a JSON text has its personal and secret keys masked at any depth and every string
 * masked by `mask`, then is written back as JSON; any other text is masked by `mask` as it is.
 */
export function maskReceived(text: string, mask: Masker): string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return mask(text);
  }
  if (parsed === null || typeof parsed !== 'object') return mask(text);
  return maskReceivedJson(parsed, mask);
}

/** {@link maskReceived} of a JSON object or array already parsed from the text received. */
export function maskReceivedJson(parsed: object, mask: Masker): string {
  // The serialized result goes through `mask` too: keys may quote a value as well.
  return mask(JSON.stringify(maskDeep(parsed, { key: isSensitiveKey, text: mask })));
}

/** `mask` for nullable columns. */
export function maskedOrNull(text: string | null, mask: Masker): string | null {
  return text === null ? null : mask(text);
}

/** {@link maskReceived} for nullable columns. */
export function maskReceivedOrNull(text: string | null, mask: Masker): string | null {
  return text === null ? null : maskReceived(text, mask);
}

/** A copy of a notification with its personal fields masked at any depth, for printing and the read API. */
export function maskPersonal(body: Record<string, unknown>): Record<string, unknown> {
  return maskDeep(body, { key: isPersonalKey }) as Record<string, unknown>;
}
