/**
 * Keeps secrets and personal data out of logs, errors, the database and status output. The one
 * place that knows which keys hold personal data (`PERSONAL_FIELDS`) and which values are secret.
 * Two nets: keys known to hold such data are masked wherever they appear in an object (any depth,
 * arrays included), and known values are masked inside any string in their common encodings (an
 * operator's error quoting a header in base64, a body echoed as JSON inside JSON, ...).
 */
import { base64Cores, jsonEscaped, textMasker } from './textForms.js';

/** The notification's personal fields: sent to the operator, shown nowhere else. */
export const PERSONAL_FIELDS = [
  'originUserName',
  'originUserEmail',
  'originUserDocId',
  'destinationUserName',
  'destinationUserEmail',
  'destinationUserDocId',
] as const;

/** Key spellings compared without case or separators: `origin_user_email` is `originUserEmail`. */
function normalizeKey(key: string): string {
  return key.toLowerCase().replace(/[^a-z0-9]/g, '');
}

const PERSONAL_KEYS = new Set<string>(PERSONAL_FIELDS.map(normalizeKey));

const SECRET_KEYS = new Set(
  [
    'apikey',
    'x-api-key',
    'authorization',
    'proxy-authorization',
    'token',
    'api_token',
    'secret',
    'secrets',
    'password',
    'cookie',
    'set-cookie',
  ].map(normalizeKey),
);

export const REDACTED = '[redacted]';
/** What stands in for a part of an object nested deeper than a mask looks. */
export const TOO_DEEP = '[too deep]';

/** Whether a key holds personal data (any case, with or without `_`/`-` separators). */
export function isPersonalKey(key: string): boolean {
  return PERSONAL_KEYS.has(normalizeKey(key));
}

/** Whether a key name holds a secret or personal data. */
export function isSensitiveKey(key: string): boolean {
  const k = normalizeKey(key);
  return SECRET_KEYS.has(k) || PERSONAL_KEYS.has(k);
}

const secrets = new Set<string>();
let secretMask: ((text: string) => string) | undefined;

/**
 * Remembers a secret value so it is masked inside any logged, stored or printed string: as it
 * is, in any letter case, URL-encoded, JSON-escaped, as hex, and in base64/base64url at any byte
 * alignment (so `Basic base64(user:key)` is caught too).
 */
export function registerSecret(value: string): void {
  // Very short values would mask ordinary words; a real key is never this short.
  if (value.length < 6 || secrets.has(value)) return;
  secrets.add(value);
  secretMask = undefined;
}

/** Every secret registered in this thread, to register in a worker thread too (modules are per thread). */
export function registeredSecrets(): string[] {
  return [...secrets];
}

function buildSecretMask(): (text: string) => string {
  const anyCase: string[] = [];
  const exact: string[] = [];
  for (const s of secrets) {
    anyCase.push(s, encodeURIComponent(s), jsonEscaped(s), Buffer.from(s).toString('hex'));
    exact.push(...base64Cores(s));
  }
  const loose = textMasker(anyCase, REDACTED, true);
  const strict = textMasker(exact, REDACTED, false);
  return (text) => strict(loose(text));
}

/** The text with every registered secret value masked, in each of its encodings. */
export function scrubText(text: string): string {
  if (secrets.size === 0) return text;
  secretMask ??= buildSecretMask();
  return secretMask(text);
}

/** How {@link maskDeep} treats keys and strings. */
export interface DeepMask {
  /** Keys whose non-null values are replaced by `REDACTED` (default: none). */
  key?: (key: string) => boolean;
  /** Applied to every string value (default: unchanged). */
  text?: (text: string) => string;
  /** Deeper than this the value is replaced by `TOO_DEEP`, never passed through (default: 32). */
  maxDepth?: number;
}

/**
 * A copy of `value` with masked keys replaced and every string passed through `text`, at any
 * depth, arrays included. Depth-bounded: what lies deeper is replaced, not copied, so an
 * adversarially nested body cannot smuggle a value past the mask or blow the stack. Cycles too.
 */
export function maskDeep(value: unknown, mask: DeepMask, depth = 0, seen = new Set<object>()): unknown {
  if (typeof value === 'string') return mask.text ? mask.text(value) : value;
  if (value === null || typeof value !== 'object') return value;
  if (depth > (mask.maxDepth ?? 32) || seen.has(value)) return TOO_DEEP;
  if (value instanceof Error) {
    const text = mask.text ?? ((s: string) => s);
    return { type: value.name, message: text(value.message), stack: value.stack && text(value.stack) };
  }
  seen.add(value);
  let out: unknown;
  if (Array.isArray(value)) out = value.map((v) => maskDeep(v, mask, depth + 1, seen));
  else {
    const obj: Record<string, unknown> = {};
    for (const [key, v] of Object.entries(value)) {
      obj[key] =
        mask.key?.(key) && v !== undefined && v !== null ? REDACTED : maskDeep(v, mask, depth + 1, seen);
    }
    out = obj;
  }
  seen.delete(value);
  return out;
}

/** A copy of `value` with sensitive keys and registered secret values masked, at any depth. */
export function redactDeep(value: unknown): unknown {
  return maskDeep(value, { key: isSensitiveKey, text: scrubText });
}
