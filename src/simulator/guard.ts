/**
 * The common front of every operator-interface request: added latency, authentication, and the
 * transport-level faults (status errors, 429, reset, HTML pages). What is left for the handler is
 * returned: the body-level faults (truncated, invalid-record, drift) need the handler's data.
 */
import type { Context } from 'hono';
import { checkAuth } from './auth.js';
import type { SimEnv, SimState } from './context.js';
import type { Fault, FaultRequest } from './faultInjection.js';
import { resetSocket, writeHtmlError, writeJson } from './respond.js';

export type GuardResult = { handled: true } | { handled: false; fault: Fault | undefined };

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

const ERROR_MESSAGES: Record<string, string> = {
  '500': 'Internal server error',
  '502': 'Bad gateway',
  '503': 'Service temporarily unavailable',
};

/** A 401 message quoting the offered credentials in the encodings a careless gateway uses. */
export function keyEcho(offered: string | undefined): string {
  const key = (offered ?? '').replace(/^Bearer\s+/i, '');
  return (
    `Unauthorized: key ${Buffer.from(key).toString('base64')} is not valid ` +
    `(KEY=${key.toUpperCase()}; apikey=${encodeURIComponent(key)}; raw ${key})`
  );
}

/**
 * Runs the front checks. `authRequired`: reads need a key; /notify accepts none (the interface is
 * silent) but still refuses a wrong one.
 */
export async function guard(
  c: Context<SimEnv>,
  state: SimState,
  req: Omit<FaultRequest, 'path' | 'method'>,
  authRequired: boolean,
): Promise<GuardResult> {
  const { incoming, outgoing } = c.env;
  const path = c.req.path;
  const base = state.faults.baseLatencyMs(path);
  if (base > 0) await sleep(base);

  const auth = checkAuth(
    { apikey: c.req.header('apikey'), authorization: c.req.header('authorization') },
    state.settings.auth,
    state.settings.apiKey,
  );
  if (auth === 'missing' && authRequired) {
    writeJson(outgoing, 401, { message: 'No API key found in request' });
    return { handled: true };
  }
  if (auth === 'wrong') {
    writeJson(outgoing, 403, { message: 'Invalid authentication credentials' });
    return { handled: true };
  }

  const admission = state.rateLimit?.admit();
  if (admission && !admission.ok) {
    writeJson(
      outgoing,
      429,
      { message: 'API rate limit exceeded' },
      { 'retry-after': String(admission.retryAfterSec) },
    );
    return { handled: true };
  }

  const fault = state.faults.take({ ...req, path, method: c.req.method });
  if (!fault) return { handled: false, fault: undefined };
  switch (fault.kind) {
    case '500':
    case '502':
    case '503':
      writeJson(outgoing, Number(fault.kind), { message: ERROR_MESSAGES[fault.kind] });
      return { handled: true };
    case '429': {
      const retryAfter = String(fault.retryAfterSec ?? 1);
      writeJson(outgoing, 429, { message: 'API rate limit exceeded' }, { 'retry-after': retryAfter });
      return { handled: true };
    }
    case '401':
      writeJson(outgoing, 401, {
        message: fault.echoKey
          ? keyEcho(c.req.header('apikey') ?? c.req.header('authorization'))
          : 'Unauthorized',
      });
      return { handled: true };
    case 'reset':
      resetSocket(incoming, outgoing);
      return { handled: true };
    case 'html':
      writeHtmlError(outgoing, fault.htmlStatus ?? 502);
      return { handled: true };
    case 'latency':
      await sleep(fault.latencyMs ?? 200);
      return { handled: false, fault: undefined };
    default:
      return { handled: false, fault };
  }
}
