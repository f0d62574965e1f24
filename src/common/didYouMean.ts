/**
 * "did you mean ...?" for names the user typed: config keys, environment variables, notification
 * fields. A typo is one or two edits away; anything farther is another word, and guessing would mislead.
 */

/** Levenshtein distance: insertions, deletions and substitutions, each one edit. */
export function editDistance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let diagonal = row[0]!;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const above = row[j]!;
      row[j] = Math.min(above + 1, row[j - 1]! + 1, diagonal + (a[i - 1] === b[j - 1] ? 0 : 1));
      diagonal = above;
    }
  }
  return row[b.length]!;
}

/**
 * The known name closest to `typed` (case ignored), when it is at most `maxEdits` away (default: 2,
 * and never more than a third of the name, so a short name does not match every other short name).
 */
export function closestName(typed: string, known: Iterable<string>, maxEdits = 2): string | undefined {
  const limit = Math.min(maxEdits, Math.max(1, Math.floor(typed.length / 3)));
  let best: string | undefined;
  let bestDistance = limit + 1;
  for (const name of known) {
    const d = editDistance(typed.toLowerCase(), name.toLowerCase());
    if (d < bestDistance) [best, bestDistance] = [name, d];
  }
  return best;
}

/** " (did you mean NAME?)" when a known name is close, else "". */
export function didYouMean(typed: string, known: Iterable<string>, maxEdits?: number): string {
  const best = closestName(typed, known, maxEdits);
  return best === undefined ? '' : ` (did you mean ${best}?)`;
}
