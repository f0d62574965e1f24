/**
 * What a verified webhook says, by the contract's default understanding (DESIGN.md, "Webhook
 * listener"): pure, no I/O. Field names come from `config.webhook.fields`; each name is looked up at
 * the top level, then under `data`; a dotted name ("payload.ref") is a path from the top.
 */

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
  /** The operation's marketplaceTransactionRef, when named. */
  ref: string | null;
  decision: Decision | null;
  reason: string | null;
  /** Only for deposits. */
  deposit: DepositIds | null;
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

/** approved / rejected / deposit from a word such as "transaction.approved" or "REJECTED". */
export function decisionFromWord(word: string | null): Decision | null {
  if (!word) return null;
  const w = word.toLowerCase();
  if (w.includes('approv')) return 'approved';
  if (w.includes('reject') || w.includes('declin') || w.includes('denied')) return 'rejected';
  if (w.includes('deposit')) return 'deposit';
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

/** Reads a payload (already known to be a JSON object). */
export function interpretPayload(payload: Obj, fields: PayloadFields): Interpretation {
  const type = firstText(payload, fields.type);
  const fromType = decisionFromWord(type);
  // The type decides when it says something; a generic type ("transaction.decided") defers to status.
  const decision = fromType ?? decisionFromWord(firstText(payload, fields.status));
  const deposit =
    decision === 'deposit'
      ? {
          projects: idsOf(payload, DEPOSIT_FIELDS.projects),
          issuances: idsOf(payload, DEPOSIT_FIELDS.issuances),
          units: idsOf(payload, DEPOSIT_FIELDS.units),
        }
      : null;
  return {
    type,
    ref: decision === 'deposit' ? null : firstText(payload, fields.ref),
    decision,
    reason: decision === 'rejected' || decision === 'approved' ? firstText(payload, fields.reason) : null,
    deposit,
  };
}
