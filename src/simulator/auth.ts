/**
 * API key checks. Part A sends the key in an `apikey` header, Part B as `Authorization: Bearer`;
 * the simulator accepts either or insists on one, so the client's configuration switch is tested.
 */
import { timingSafeEqual } from 'node:crypto';

export type AuthMode = 'apikey' | 'bearer' | 'either';
export type AuthResult = 'ok' | 'missing' | 'wrong';

function same(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

function bearer(authorization: string | undefined): string | undefined {
  const m = authorization === undefined ? null : /^Bearer\s+(.+)$/i.exec(authorization.trim());
  return m?.[1];
}

/**
 * 'ok' when an accepted header carries the key; 'wrong' when some accepted header carries
 * another value (→ 403); 'missing' when none is present (→ 401).
 */
export function checkAuth(
  headers: { apikey?: string | undefined; authorization?: string | undefined },
  mode: AuthMode,
  key: string,
): AuthResult {
  const offered: string[] = [];
  if (mode !== 'bearer' && headers.apikey !== undefined) offered.push(headers.apikey);
  if (mode !== 'apikey' && headers.authorization !== undefined)
    offered.push(bearer(headers.authorization) ?? '');
  if (offered.length === 0) return 'missing';
  return offered.some((v) => same(v, key)) ? 'ok' : 'wrong';
}

/** Headers that must never be recorded or echoed. */
export const SECRET_HEADERS = new Set(['apikey', 'authorization', 'cookie', 'proxy-authorization']);
