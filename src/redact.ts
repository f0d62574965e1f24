/**
 * Keeps secrets and personal data out of logs, errors and status output.
 * Two nets: keys known to hold such data are masked wherever they appear, and the values of the
 * configured secrets are masked inside any string (an error message that quotes a header, say).
 */

/** The notification's personal fields: sent to the operator, shown nowhere else. */
export const PERSONAL_FIELDS = [
  'originUserName',
  'originUserEmail',
  'originUserDocId',
  'destinationUserName',
  'destinationUserEmail',
  'destinationUserDocId',
] as const;

const SENSITIVE_KEYS = new Set(
  [
    'apikey',
    'api_key',
    'apiKey',
    'authorization',
    'token',
    'api_token',
    'secret',
    'secrets',
    'password',
    'cookie',
    'set-cookie',
    ...PERSONAL_FIELDS,
  ].map((k) => k.toLowerCase()),
);

export const REDACTED = '[redacted]';

const secrets = new Set<string>();

/** Remembers a secret value so it is masked inside any logged or printed string. */
export function registerSecret(value: string): void {
  // Very short values would mask ordinary words; a real key is never this short.
  if (value.length >= 6) secrets.add(value);
}

/** Whether a key name holds a secret or personal data. */
export function isSensitiveKey(key: string): boolean {
  return SENSITIVE_KEYS.has(key.toLowerCase());
}

/** The text with every registered secret value masked. */
export function scrubText(text: string): string {
  let out = text;
  for (const secret of secrets) {
    if (out.includes(secret)) out = out.split(secret).join(REDACTED);
  }
  return out;
}

/** A copy of `value` with sensitive keys and registered secret values masked, at any depth. */
export function redactDeep(value: unknown, depth = 0): unknown {
  if (typeof value === 'string') return scrubText(value);
  if (value === null || typeof value !== 'object' || depth > 8) return value;
  if (value instanceof Error) {
    return {
      type: value.name,
      message: scrubText(value.message),
      stack: value.stack && scrubText(value.stack),
    };
  }
  if (Array.isArray(value)) return value.map((v) => redactDeep(v, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(value)) {
    out[key] = isSensitiveKey(key) && v !== undefined && v !== null ? REDACTED : redactDeep(v, depth + 1);
  }
  return out;
}
