/**
 * The decision vocabulary (`config.webhook.decisions`): which whole values approve, reject, confirm
 * a deposit, or are known to decide nothing. Pure.
 *
 * A value matches a list when its canonical form (see `words.ts`) equals one of the list's words.
 * An event type may also carry leading prefix words ("transaction.approved", "CUSTODY_DEPOSIT"):
 * every token before the word must be a configured prefix, so "not.approved",
 * "pending_approval" or "transaction.rejected_after_approval_review" match nothing.
 */
import { canonicalWord, wordTokens } from '../common/words.js';

/** The lists as configured. */
export interface DecisionLists {
  approved: readonly string[];
  rejected: readonly string[];
  deposit: readonly string[];
  neutral: readonly string[];
  type_prefixes: readonly string[];
}

/** What a value says. */
export type Classified = 'approved' | 'rejected' | 'deposit' | 'neutral' | 'unknown';

/** The lists compiled for lookups. */
export interface Vocabulary {
  readonly words: ReadonlyMap<string, Exclude<Classified, 'unknown'>>;
  readonly prefixes: ReadonlySet<string>;
  /**
   * Values already classified (key: "t" or "s", then the value): an operator sends a handful of
   * types and statuses, and tokenizing them was ~3 % of a verified webhook's time. At most
   * MEMO_CAP entries (default: absent, and every value is classified afresh).
   */
  readonly memo?: Map<string, Classified>;
}

/** Most values a vocabulary remembers; past it the memo starts again, so a sender cannot grow it. */
const MEMO_CAP = 256;
/** Longest value remembered: a type or status is a word or two, anything longer is not kept. */
const MEMO_VALUE_MAX = 100;

/** Compiles the configured lists (the config check has refused a word in two lists). */
export function compileVocabulary(lists: DecisionLists): Vocabulary {
  const words = new Map<string, Exclude<Classified, 'unknown'>>();
  for (const kind of ['approved', 'rejected', 'deposit', 'neutral'] as const) {
    for (const word of lists[kind]) words.set(canonicalWord(word), kind);
  }
  return { words, prefixes: new Set(lists.type_prefixes.map(canonicalWord)), memo: new Map() };
}

/**
 * What one value says. With `allowPrefixes` (event types), leading tokens that are all configured
 * prefixes may precede the word; the rest must still be one whole word.
 */
export function classifyValue(value: string, vocabulary: Vocabulary, allowPrefixes: boolean): Classified {
  const { memo } = vocabulary;
  if (!memo || value.length > MEMO_VALUE_MAX) return classifyAfresh(value, vocabulary, allowPrefixes);
  const key = (allowPrefixes ? 't' : 's') + value;
  let known = memo.get(key);
  if (known === undefined) {
    known = classifyAfresh(value, vocabulary, allowPrefixes);
    if (memo.size >= MEMO_CAP) memo.clear();
    memo.set(key, known);
  }
  return known;
}

/** {@link classifyValue} without the memo. Pure. */
function classifyAfresh(value: string, vocabulary: Vocabulary, allowPrefixes: boolean): Classified {
  const tokens = wordTokens(value);
  if (tokens.length === 0) return 'unknown';
  const last = allowPrefixes ? tokens.length - 1 : 0;
  for (let skip = 0; skip <= last; skip++) {
    if (skip > 0 && !vocabulary.prefixes.has(tokens[skip - 1]!)) break;
    const found = vocabulary.words.get(tokens.slice(skip).join(' '));
    if (found) return found;
  }
  return 'unknown';
}
