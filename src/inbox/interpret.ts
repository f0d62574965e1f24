/**
 * What a verified webhook says, by the contract's default understanding (DESIGN.md, "Webhook
 * listener"): pure, no I/O. Field names come from `config.webhook.fields`; each name is looked up at
 * the top level, then under `data`; a dotted name ("payload.ref") is a path from the top.
 *
 * A decision is read, never guessed: the type and the status are compared as whole values with the
 * configured vocabulary (`config.webhook.decisions`, see `vocabulary.ts`); a word in no list decides
 * nothing and is reported as undecided.
 */
import { type Classified, classifyValue, type Vocabulary } from './vocabulary.js';

/** Where each fact is read, first found wins (config `webhook.fields`). */
export interface PayloadFields {
  /** (default: ["type", "event", "eventType"]) */
  type: readonly string[];
  /** (default: ["marketplaceTransactionRef", "transactionReferenceId"]) */
  ref: readonly string[];
  /** (default: ["status"]) */
  status: readonly string[];
  /** (default: ["reason"]) */
  reason: readonly string[];
}

/** A decision about an operation, or a custody deposit. */
export type Decision = 'approved' | 'rejected' | 'deposit';

/** Ids a deposit confirmation names, as custody_ids kinds. */
export interface DepositIds {
  projects: string[];
  issuances: string[];
  units: string[];
}

/** What one payload means. */
export interface Interpretation {
  /** The event type, when the payload names one. */
  type: string | null;
  /** The status value as received, when the payload has one. */
  status: string | null;
  /** The operation's marketplaceTransactionRef, when named. */
  ref: string | null;
  decision: Decision | null;
  reason: string | null;
  /** Only for deposits. */
  deposit: DepositIds | null;
  /** Why no decision could be read from a webhook that should carry one (null when it decides, or is not about an operation). */
  undecided: string | null;
}

/** Longest text kept from a payload field; the full body is stored anyway. */
const MAX_TEXT = 1000;
const MAX_IDS = 10_000;

const DEPOSIT_FIELDS: Record<keyof DepositIds, readonly string[]> = {
  projects: ['projectID', 'projectId', 'projectIds', 'projectIDs'],
  issuances: ['issuanceId', 'issuanceID', 'issuanceIds', 'issuanceIDs'],
  units: ['unitIds', 'unitIDs', 'unitId', 'unitID'],
};

type Obj = Record<string, unknown>;

function isObject(value: unknown): value is Obj {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function lookup(payload: Obj, name: string): unknown {
  if (name.includes('.')) {
    let at: unknown = payload;
    for (const part of name.split('.')) at = isObject(at) ? at[part] : undefined;
    return at;
  }
  if (payload[name] !== undefined && payload[name] !== null) return payload[name];
  const data = payload.data;
  return isObject(data) ? data[name] : undefined;
}

/** A scalar as text (ids arrive as numbers or strings; `12` and `"12"` are the same). */
function asText(value: unknown): string | null {
  if (typeof value === 'string') {
    const t = value.trim();
    return t === '' ? null : t.slice(0, MAX_TEXT);
  }
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  return null;
}

function firstText(payload: Obj, names: readonly string[]): string | null {
  for (const name of names) {
    const text = asText(lookup(payload, name));
    if (text !== null) return text;
  }
  return null;
}

function idsOf(payload: Obj, names: readonly string[]): string[] {
  const out = new Set<string>();
  for (const name of names) {
    const value = lookup(payload, name);
    for (const item of Array.isArray(value) ? value : [value]) {
      const text = asText(item);
      if (text !== null && text.length <= 200 && out.size < MAX_IDS) out.add(text);
    }
  }
  return [...out];
}

/** A value for messages: short, quoted (decision words are the operator's vocabulary, not personal data). */
function quoted(value: string): string {
  return JSON.stringify(value.length > 80 ? `${value.slice(0, 80)}…` : value);
}

/**
 * The decision, or why none could be read, from what the type and the status say. Pure.
 * Both present and deciding: they must agree. A status that is in no list decides nothing, whatever
 * the type says. A deciding type beside a neutral status ("pending") decides nothing either.
 * Undecided is flagged only for an event that names an operation (or contradicts itself): other
 * events without a known word are unknown event types, stored and ignored.
 */
export function combine(
  type: { text: string; is: Classified } | null,
  status: { text: string; is: Classified } | null,
  namesOperation: boolean,
): { decision: Decision | null; undecided: string | null } {
  const t = type?.is ?? null;
  const s = status?.is ?? null;
  const deciding = (c: Classified | null): c is Decision =>
    c === 'approved' || c === 'rejected' || c === 'deposit';
  const flag = (why: string) => ({ decision: null, undecided: namesOperation ? why : null });
  if (type && status && deciding(t) && deciding(s) && t !== s) {
    return {
      decision: null,
      undecided: `type ${quoted(type.text)} and status ${quoted(status.text)} disagree`,
    };
  }
  // A deposit is named by its type (or status); another status beside it is not a decision.
  if (t === 'deposit' || s === 'deposit') return { decision: 'deposit', undecided: null };
  if (status && s === 'unknown') return flag(`status ${quoted(status.text)} is in no webhook.decisions list`);
  if (deciding(s)) return { decision: s, undecided: null };
  if (deciding(t)) {
    if (status && s === 'neutral') {
      return flag(`type ${quoted(type!.text)} decides but status ${quoted(status.text)} says not yet`);
    }
    return { decision: t, undecided: null };
  }
  if (t === 'neutral' || s === 'neutral') return { decision: null, undecided: null };
  if (type && t === 'unknown') return flag(`type ${quoted(type.text)} is in no webhook.decisions list`);
  return flag('names an operation but carries no type or status');
}

/** Reads a payload (already known to be a JSON object). */
export function interpretPayload(
  payload: Obj,
  fields: PayloadFields,
  vocabulary: Vocabulary,
): Interpretation {
  const type = firstText(payload, fields.type);
  const status = firstText(payload, fields.status);
  const ref = firstText(payload, fields.ref);
  const { decision, undecided } = combine(
    type === null ? null : { text: type, is: classifyValue(type, vocabulary, true) },
    status === null ? null : { text: status, is: classifyValue(status, vocabulary, false) },
    ref !== null,
  );
  const deposit =
    decision === 'deposit'
      ? {
          projects: idsOf(payload, DEPOSIT_FIELDS.projects),
          issuances: idsOf(payload, DEPOSIT_FIELDS.issuances),
          units: idsOf(payload, DEPOSIT_FIELDS.units),
        }
      : null;
  const aboutOperation = decision === 'approved' || decision === 'rejected' || undecided !== null;
  return {
    type,
    status,
    ref: decision === 'deposit' ? null : ref,
    decision,
    reason: aboutOperation ? firstText(payload, fields.reason) : null,
    deposit,
    undecided,
  };
}
