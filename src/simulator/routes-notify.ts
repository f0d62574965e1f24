/**
 * POST /integration/v1/notify (reportTransaction): validates like a strict operator, answers
 * 200 (Part A) or 202 (Part B) with the body echoed, records every request in arrival order, and
 * triggers the decision webhook. A repeated marketplaceTransactionRef is recorded and accepted
 * again: delivery is at-least-once and the operator must tolerate it. An approval changes the
 * registry's books once per ref (books.ts).
 */
import { RESPONSE_ALREADY_SENT } from '@hono/node-server/utils/response';
import type { Context, Hono } from 'hono';
import { SECRET_HEADERS } from './auth.js';
import type { ReceivedNotification, SimEnv, SimState } from './context.js';
import { guard } from './guard.js';
import { checkNotification } from './notify.js';
import { outcomeOf, writeBody, writeJson, writeTruncated } from './respond.js';

function safeHeaders(c: Context<SimEnv>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(c.req.header())) if (!SECRET_HEADERS.has(k.toLowerCase())) out[k] = v;
  return out;
}

function parseLoose(raw: string): unknown {
  try {
    return JSON.parse(raw);
  } catch {
    return raw;
  }
}

const field = (body: unknown, name: string): string =>
  typeof body === 'object' && body !== null ? String((body as Record<string, unknown>)[name] ?? '') : '';

/**
 * The `echo` fault's error body: an operator that quotes what it was sent, personal fields
 * included, in its message, in a field error, and as the whole request.
 */
export function echoError(body: unknown): Record<string, unknown> {
  return {
    message:
      `Holder ${field(body, 'originUserName')} <${field(body, 'originUserEmail')}> ` +
      `(document ${field(body, 'originUserDocId')}) does not match the account`,
    errors: [
      {
        field: 'destinationUserEmail',
        message: `unknown user ${field(body, 'destinationUserName')}`,
        value: field(body, 'destinationUserEmail'),
        docId: field(body, 'destinationUserDocId'),
      },
    ],
    request: body,
  };
}

async function notify(c: Context<SimEnv>, state: SimState): Promise<Response> {
  const raw = await c.req.text();
  const body = parseLoose(raw);
  const ref =
    typeof body === 'object' && body !== null && 'marketplaceTransactionRef' in body
      ? body.marketplaceTransactionRef
      : undefined;
  const entry: ReceivedNotification = {
    seq: state.notifications.length + 1,
    receivedAt: new Date().toISOString(),
    headers: safeHeaders(c),
    body,
    ...(typeof ref === 'string' ? { ref } : {}),
    status: 0,
  };
  state.notifications.push(entry);
  const res = c.env.outgoing;
  // The status is filled in when the response closes, whatever path answered it.
  res.once('close', () => {
    entry.status = outcomeOf.get(res) ?? (res.writableFinished ? res.statusCode : 'aborted');
  });

  const g = await guard(c, state, { isList: false, returnsRecords: false }, false);
  if (g.handled) return RESPONSE_ALREADY_SENT;

  if (g.fault?.kind === 'echo') {
    writeJson(res, g.fault.echoStatus ?? 422, echoError(body));
    return RESPONSE_ALREADY_SENT;
  }
  const check = checkNotification(raw);
  if (!check.ok) {
    writeJson(
      res,
      check.status,
      check.errors ? { message: check.message, errors: check.errors } : { message: check.message },
    );
    return RESPONSE_ALREADY_SENT;
  }
  // The books change at decision time, before the webhook tells anyone (delivered or not).
  state.books.onDecided(check.body, state.webhooks.decide(String(check.body.marketplaceTransactionRef)));
  // beforeResponse: the decision may reach the marketplace before it sees its own 2xx.
  await state.webhooks.onAccepted(check.body);
  const echo = JSON.stringify(check.body);
  if (g.fault?.kind === 'truncated')
    writeTruncated(res, state.settings.notifyStatus, echo, g.fault.truncateMode ?? 'short-body');
  else writeBody(res, state.settings.notifyStatus, echo);
  return RESPONSE_ALREADY_SENT;
}

export function registerNotifyRoute(app: Hono<SimEnv>, state: SimState): void {
  app.post('/integration/v1/notify', (c) => notify(c, state));
}
