/**
 * The decision vocabulary (`config.webhook.decisions`): which whole values approve, reject, confirm
 * a deposit, or are known to decide nothing. Pure.
 *
 * A value matches a list when its canonical form (see `words.ts`) equals one of the list's words.
 * An event type may also carry leading prefix words ("transaction.approved", "CUSTODY_DEPOSIT"):
 * every token before the word must be a configured prefix, so "not.approved",
 * "pending_approval" or "transaction.rejected_after_approval_review" match nothing.
 */
import { canonicalWord, wordTokens } from '../words.js';

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
}

/** Compiles the configured lists (the config check has refused a word in two lists). */
export function compileVocabulary(lists: DecisionLists): Vocabulary {
  const words = new Map<string, Exclude<Classified, 'unknown'>>();
  for (const kind of ['approved', 'rejected', 'deposit', 'neutral'] as const) {
    for (const word of lists[kind]) words.set(canonicalWord(word), kind);
  }
  return { words, prefixes: new Set(lists.type_prefixes.map(canonicalWord)) };
}

/**
 * What one value says. With `allowPrefixes` (event types), leading tokens that are all configured
 * prefixes may precede the word; the rest must still be one whole word.
 */
export function classifyValue(value: string, vocabulary: Vocabulary, allowPrefixes: boolean): Classified {
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
