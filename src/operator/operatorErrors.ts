import { scrubText } from '../common/redact.js';

/** How a failed operator call should be handled by the loop that made it. */
export type OperatorErrorKind = 'transient' | 'rate-limited' | 'auth' | 'permanent' | 'invalid-response';

/** A failed call to the operator, classified so the loops can decide what to do next. */
export class OperatorError extends Error {
  readonly kind: OperatorErrorKind;
  /** HTTP status, when there was an answer. */
  readonly status: number | undefined;
  /** How long the operator asked us to wait (429, 503 with Retry-After), in milliseconds. */
  readonly retryAfterMs: number | undefined;
  /**
   * Why the request went out without an API key ("no API key was configured", ...), when it did;
   * a 401/403 to such a request is not the operator refusing our key.
   */
  readonly keyNotSent: string | undefined;

  constructor(
    kind: OperatorErrorKind,
    message: string,
    status?: number,
    retryAfterMs?: number,
    keyNotSent?: string,
  ) {
    super(scrubText(message));
    this.name = 'OperatorError';
    this.kind = kind;
    this.status = status;
    this.retryAfterMs = retryAfterMs;
    this.keyNotSent = keyNotSent;
  }

  /** Worth trying again later (transient or rate-limited). */
  get retryable(): boolean {
    return this.kind === 'transient' || this.kind === 'rate-limited';
  }
}

/**
 * Parses `Retry-After` (delta seconds or an HTTP date) into milliseconds from `nowMs`;
 * undefined when absent or unreadable.
 */
export function parseRetryAfter(value: string | undefined, nowMs: number): number | undefined {
  if (value === undefined || value.trim() === '') return undefined;
  const trimmed = value.trim();
  if (/^\d+(\.\d+)?$/.test(trimmed)) return Math.round(Number(trimmed) * 1000);
  const date = Date.parse(trimmed);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, date - nowMs);
}

/** The operator's own words from an error body: `message`/`error` of a JSON body, else a short excerpt. */
export function operatorMessage(body: string): string {
  const text = body.trim();
  if (text === '') return 'no message';
  try {
    const parsed: unknown = JSON.parse(text);
    if (parsed && typeof parsed === 'object') {
      const o = parsed as Record<string, unknown>;
      const message = o.message ?? o.error ?? o.detail ?? o.title;
      if (typeof message === 'string' && message !== '') {
        const details = Array.isArray(o.errors) ? ` (${JSON.stringify(o.errors).slice(0, 300)})` : '';
        return `${message}${details}`.slice(0, 500);
      }
    }
  } catch {
    // Not JSON: fall through to an excerpt.
  }
  if (/^<(!doctype|html)/i.test(text)) return 'an HTML page instead of JSON';
  return text.replace(/\s+/g, ' ').slice(0, 200);
}

/**
 * Classifies an HTTP error status into the error the loops act on. `keyNotSent` says why the
 * request carried no API key, if it did not: a 401/403 then says so instead of blaming the key.
 */
export function errorForStatus(
  status: number,
  body: string,
  retryAfter: string | undefined,
  nowMs: number,
  keyNotSent?: string,
): OperatorError {
  // Secrets are masked before the body is cut to an excerpt, so none is left half-masked.
  const message = `operator answered ${status}: ${operatorMessage(scrubText(body))}`;
  const wait = parseRetryAfter(retryAfter, nowMs);
  if (status === 429) return new OperatorError('rate-limited', message, status, wait);
  if (status === 401 || status === 403) {
    if (keyNotSent === undefined) return new OperatorError('auth', message, status);
    return new OperatorError(
      'auth',
      `operator answered ${status} to a request sent without an API key (${keyNotSent}): ${operatorMessage(body)}`,
      status,
      undefined,
      keyNotSent,
    );
  }
  if (status === 408 || status === 425 || status >= 500)
    return new OperatorError('transient', message, status, wait);
  return new OperatorError('permanent', message, status);
}

/** Codes of a connection that never got to the operator: a wrong host, port or scheme is the likely cause. */
const NOT_REACHED =
  /^(ECONNREFUSED|ENOTFOUND|EAI_AGAIN|EAI_NONAME|EHOSTUNREACH|ENETUNREACH|EADDRNOTAVAIL|EPROTO|ERR_SSL_|CERT_|UNABLE_TO_|DEPTH_ZERO_SELF_SIGNED_CERT|SELF_SIGNED_CERT|ERR_TLS_CERT_ALTNAME_INVALID)/;

/** Where the operator's address is set, named when it could not be reached. */
export const OPERATOR_URL_HINT = 'check operator.url (set in the config file or by VCU_SYNC_OPERATOR_URL)';

/**
 * Classifies a network-level failure (reset, refused, timeout) as transient. One that never reached
 * the operator (refused, unknown host, no route, TLS, a connect timeout) names `operator.url`, where
 * the fix usually is; a reset or a slow answer is the operator's, and does not.
 */
export function errorForNetwork(err: unknown): OperatorError {
  const e = err as { code?: string; message?: string; name?: string; event?: string };
  const what =
    e.code === 'ETIMEDOUT' || e.name === 'TimeoutError' ? 'timed out' : (e.code ?? e.message ?? 'failed');
  const connecting =
    (e.name === 'TimeoutError' && /^(lookup|connect|secureConnect)$/.test(e.event ?? '')) ||
    NOT_REACHED.test(e.code ?? '');
  return new OperatorError(
    'transient',
    `operator request ${what}${e.message && e.code ? `: ${e.message}` : ''}${connecting ? `; ${OPERATOR_URL_HINT}` : ''}`,
  );
}
