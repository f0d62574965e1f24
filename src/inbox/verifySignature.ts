/**
 * Is this webhook genuine? Pure functions: headers, the raw body bytes, the secrets and the time go
 * in; either the message id to deduplicate on or a 401 with a reason comes out.
 *
 * Schemes (config `webhook.scheme`):
 * - `standard-webhooks`: `webhook-id`, `webhook-timestamp`, `webhook-signature` carrying one or
 *   more space-separated `v1,<base64 HMAC-SHA256(key, "id.timestamp.body")>`; secrets `whsec_<base64>`.
 * - `hmac`: one header with the hex or base64 HMAC-SHA256 of the body (or of "timestamp.body"
 *   when a timestamp header is configured); secrets are used as UTF-8 keys.
 * - `token`: one header that must equal a secret.
 * - `none`: everything passes; only when configured explicitly.
 * Every comparison is constant-time, and every secret is tried, so keys can rotate without a gap.
 */
import { createHash, createHmac, createSecretKey, type KeyObject, timingSafeEqual } from 'node:crypto';

/** Reads one request header by its lower-case name. */
export type HeaderReader = (name: string) => string | undefined;

/** What verification concluded. */
export type VerifyResult =
  | { readonly ok: true; readonly webhookId: string }
  | { readonly ok: false; readonly status: 401; readonly reason: string };

/** A verifier built once from the configuration, called per request. */
export type Verifier = (headers: HeaderReader, body: Uint8Array, nowMs: number) => VerifyResult;

/** Settings of {@link createVerifier}, as `config.webhook` names them. */
export interface VerifierOptions {
  /** Which scheme (default: "standard-webhooks"). */
  scheme: 'standard-webhooks' | 'hmac' | 'token' | 'none';
  /** Secrets, several during key rotation (default: none, which refuses every request unless scheme is none). */
  secrets: readonly string[];
  /** Accepted clock skew both ways, in seconds (default: 300). */
  toleranceSeconds: number;
  /** `hmac`: header holding the signature (default: "x-signature"). */
  hmacHeader?: string;
  /** `hmac`: signature encoding (default: "hex"). */
  hmacEncoding?: 'hex' | 'base64';
  /** `hmac`: header with a timestamp in seconds, signed as "timestamp.body" (default: none). */
  hmacTimestampHeader?: string | undefined;
  /** `token`: header that must equal a secret (default: "x-webhook-token"). */
  tokenHeader?: string;
  /** Schemes other than standard-webhooks: header with the sender's message id (default: "webhook-id"). */
  idHeader?: string;
}

const WHSEC_PREFIX = 'whsec_';
/** Longest message id kept; longer ones are hashed so a hostile sender cannot bloat the table. */
const MAX_ID_LENGTH = 256;

function fail(reason: string): VerifyResult {
  return { ok: false, status: 401, reason };
}

/** The HMAC key of a Standard Webhooks secret (`whsec_` prefix optional, base64 body). */
export function standardWebhooksKey(secret: string): Buffer {
  const body = secret.startsWith(WHSEC_PREFIX) ? secret.slice(WHSEC_PREFIX.length) : secret;
  return Buffer.from(body, 'base64');
}

/** Signs like a Standard Webhooks sender: `v1,<base64>`. Used by tests and tools. */
export function signStandardWebhook(
  key: Uint8Array | KeyObject,
  id: string,
  timestampSeconds: number,
  body: Uint8Array,
): string {
  return `v1,${standardMac(key, id, timestampSeconds, body)}`;
}

/** The base64 HMAC-SHA256 of "id.timestamp.body": one Hmac, the body hashed where it lies. */
function standardMac(
  key: Uint8Array | KeyObject,
  id: string,
  timestampSeconds: number,
  body: Uint8Array,
): string {
  return createHmac('sha256', key).update(`${id}.${timestampSeconds}.`).update(body).digest('base64');
}

/** Parses a timestamp header: whole seconds since the epoch, digits only. */
function parseSeconds(value: string): number | undefined {
  const trimmed = value.trim();
  if (!/^\d{1,12}$/.test(trimmed)) return undefined;
  return Number(trimmed);
}

/** Why a timestamp is refused, or undefined when it lies within the tolerance. */
export function checkTimestamp(
  header: string | undefined,
  nowMs: number,
  toleranceSeconds: number,
): string | undefined {
  if (header === undefined || header === '') return 'missing timestamp header';
  const seconds = parseSeconds(header);
  if (seconds === undefined) return 'timestamp header is not whole seconds since the epoch';
  const skew = seconds - Math.floor(nowMs / 1000);
  if (skew < -toleranceSeconds) return 'timestamp too old (outside the tolerance)';
  if (skew > toleranceSeconds) return 'timestamp too far in the future (outside the tolerance)';
  return undefined;
}

/** Constant-time equality of two byte strings of possibly different length. */
function sameBytes(a: Buffer, b: Buffer): boolean {
  // timingSafeEqual needs equal lengths; the length of a MAC is public, so this leaks nothing.
  return a.length === b.length && timingSafeEqual(a, b);
}

function boundedId(id: string): string {
  return id.length <= MAX_ID_LENGTH ? id : `sha256:${createHash('sha256').update(id).digest('hex')}`;
}

/** The id of a message from a scheme without ids: the id header if sent, else a hash of the body. */
function messageId(headers: HeaderReader, idHeader: string, body: Uint8Array): string {
  const sent = headers(idHeader)?.trim();
  if (sent) return boundedId(sent);
  return `sha256:${createHash('sha256').update(body).digest('hex')}`;
}

/**
 * Keys made into KeyObjects once: createHmac given raw bytes builds one per call, which was ~7 % of
 * the verified webhook path's time (10 us of 12 per HMAC).
 */
function keyObjects(keys: readonly Buffer[]): (KeyObject | Buffer)[] {
  return keys.map((key) => {
    try {
      return createSecretKey(key);
    } catch {
      // An empty key cannot be a KeyObject; it still verifies nothing, as before.
      return key;
    }
  });
}

function verifyStandard(rawKeys: readonly Buffer[], toleranceSeconds: number): Verifier {
  const keys = keyObjects(rawKeys);
  return (headers, body, nowMs) => {
    const id = headers('webhook-id')?.trim();
    const timestamp = headers('webhook-timestamp');
    const signatures = headers('webhook-signature');
    if (!id) return fail('missing webhook-id header');
    if (!signatures) return fail('missing webhook-signature header');
    const stale = checkTimestamp(timestamp, nowMs, toleranceSeconds);
    if (stale) return fail(stale);
    const seconds = parseSeconds(timestamp as string) as number;
    const offered: Buffer[] = [];
    for (const part of signatures.split(' ')) {
      const comma = part.indexOf(',');
      if (comma < 0 || part.slice(0, comma) !== 'v1') continue;
      offered.push(Buffer.from(part.slice(comma + 1), 'utf8'));
    }
    if (offered.length === 0) return fail('no v1 signature in webhook-signature');
    for (const key of keys) {
      const expected = Buffer.from(standardMac(key, id, seconds, body), 'utf8');
      for (const candidate of offered)
        if (sameBytes(candidate, expected)) return { ok: true, webhookId: boundedId(id) };
    }
    return fail('no matching signature');
  };
}

function verifyHmac(rawKeys: readonly Buffer[], options: VerifierOptions, idHeader: string): Verifier {
  const keys = keyObjects(rawKeys);
  const header = (options.hmacHeader ?? 'x-signature').toLowerCase();
  const encoding = options.hmacEncoding ?? 'hex';
  const timestampHeader = options.hmacTimestampHeader?.toLowerCase();
  return (headers, body, nowMs) => {
    const raw = headers(header)?.trim();
    if (!raw) return fail(`missing ${header} header`);
    // Senders often prefix the algorithm ("sha256=..."); the value after it is the MAC.
    const value = /^sha256=/i.test(raw) ? raw.slice('sha256='.length) : raw;
    let prefix = '';
    if (timestampHeader) {
      const ts = headers(timestampHeader);
      const stale = checkTimestamp(ts, nowMs, options.toleranceSeconds);
      if (stale) return fail(stale);
      prefix = `${parseSeconds(ts as string)}.`;
    }
    const offered = Buffer.from(encoding === 'hex' ? value.toLowerCase() : value, 'utf8');
    for (const key of keys) {
      const expected = Buffer.from(
        createHmac('sha256', key).update(prefix).update(body).digest(encoding),
        'utf8',
      );
      if (sameBytes(offered, expected)) return { ok: true, webhookId: messageId(headers, idHeader, body) };
    }
    return fail('no matching signature');
  };
}

function verifyToken(secrets: readonly string[], options: VerifierOptions, idHeader: string): Verifier {
  const header = (options.tokenHeader ?? 'x-webhook-token').toLowerCase();
  // Comparing digests keeps the comparison constant-time whatever the token's length.
  const digests = secrets.map((s) => createHash('sha256').update(s).digest());
  return (headers, body) => {
    const token = headers(header);
    if (!token) return fail(`missing ${header} header`);
    const offered = createHash('sha256').update(token.trim()).digest();
    for (const digest of digests)
      if (timingSafeEqual(offered, digest))
        return { ok: true, webhookId: messageId(headers, idHeader, body) };
    return fail('token does not match');
  };
}

/**
 * Builds the verifier for a configuration; keys are decoded once here, not per request.
 * Throws an Error naming the problem when a scheme that needs secrets has none.
 */
export function createVerifier(options: VerifierOptions): Verifier {
  const idHeader = (options.idHeader ?? 'webhook-id').toLowerCase();
  if (options.scheme === 'none')
    return (headers, body) => ({ ok: true, webhookId: messageId(headers, idHeader, body) });
  if (options.secrets.length === 0) {
    throw new Error(
      `webhook.secrets is empty: scheme ${options.scheme} needs at least one secret (or set scheme = "none")`,
    );
  }
  switch (options.scheme) {
    case 'standard-webhooks':
      return verifyStandard(options.secrets.map(standardWebhooksKey), options.toleranceSeconds);
    case 'hmac':
      return verifyHmac(
        options.secrets.map((s) => Buffer.from(s, 'utf8')),
        options,
        idHeader,
      );
    case 'token':
      return verifyToken(options.secrets, options, idHeader);
  }
}
