/**
 * How webhook decision words are compared (shared by the config check and the interpreter, so a
 * word refused as duplicated is exactly a word that would match twice): lower-cased, split on
 * `.`, `_`, `-`, `:`, `/` and whitespace. Whole tokens only, never substrings.
 */

/** The tokens of a value: "Transaction.APPROVED" → ["transaction", "approved"]. */
export function wordTokens(text: string): string[] {
  return text
    .toLowerCase()
    .split(/[\s._:/-]+/)
    .filter(Boolean);
}

/** The canonical spelling of a value: its tokens joined by one space. */
export function canonicalWord(text: string): string {
  return wordTokens(text).join(' ');
}
