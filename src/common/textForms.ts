/**
 * The forms a value takes when other software quotes it, and a masker that replaces them all.
 * Pure. Masking by the exact string is beaten by the first JSON encoder on the way (`"` becomes
 * `\"`), so values are looked for as they are and in each encoding an operator's error body, a
 * log line or a page is likely to carry.
 */

/** The value as it appears inside a JSON string. */
export function jsonEscaped(value: string): string {
  return JSON.stringify(value).slice(1, -1);
}

/** JSON-escaped with every non-ASCII character as `\uXXXX` (Python's json.dumps, many Java encoders). */
export function asciiJsonEscaped(value: string): string {
  return jsonEscaped(value).replace(
    /[\u007f-\uffff]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}

const HTML_QUOTES: ReadonlyArray<{ apos: string; quot: string }> = [
  { apos: '&#39;', quot: '&quot;' },
  { apos: '&#x27;', quot: '&#34;' },
  { apos: '&apos;', quot: '&quot;' },
];

function htmlEscaped(value: string, q: { apos: string; quot: string }): string {
  return value
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, q.quot)
    .replace(/'/g, q.apos);
}

/**
 * The forms a personal value may take in text: as it is (NFC and NFD), JSON-escaped once and
 * twice (a JSON body quoted inside a JSON string), JSON with `\uXXXX` escapes, URL-encoded (with
 * `%20` or `+`) and HTML-escaped. Letter case is left to the masker.
 */
export function textForms(value: string): string[] {
  const forms = new Set<string>();
  for (const v of new Set([value, value.normalize('NFC'), value.normalize('NFD')])) {
    const json = jsonEscaped(v);
    forms.add(v);
    forms.add(json);
    forms.add(jsonEscaped(json));
    forms.add(asciiJsonEscaped(v));
    forms.add(jsonEscaped(asciiJsonEscaped(v)));
    const url = encodeURIComponent(v);
    forms.add(url);
    forms.add(url.replace(/%20/g, '+'));
    for (const q of HTML_QUOTES) forms.add(htmlEscaped(v, q));
  }
  return [...forms];
}

/**
 * The base64 (and base64url) texts that betray `value` wherever it sits in an encoded string: its
 * own encoding, plus for each of the three byte alignments the run of characters that encodes
 * only bytes of the value (so `base64("user:" + key)` is caught, not only `base64(key)`).
 * Runs shorter than 8 characters are left out: they would mask ordinary text.
 */
export function base64Cores(value: string): string[] {
  const bytes = Buffer.from(value);
  const out = new Set<string>();
  const whole = bytes.toString('base64');
  out.add(whole);
  out.add(whole.replace(/=+$/, ''));
  for (let k = 0; k < 3; k++) {
    const shifted = Buffer.concat([Buffer.alloc(k), bytes]);
    const encoded = shifted.toString('base64');
    const full = Math.floor(shifted.length / 3) * 4;
    const core = encoded.slice(k === 0 ? 0 : 4, full);
    if (core.length >= 8) out.add(core);
  }
  for (const form of [...out]) out.add(form.replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, ''));
  return [...out];
}

const SPECIAL = /[\\^$.*+?()[\]{}|/]/g;

/**
 * A function replacing every occurrence of any of `forms` by `mark`; longer forms win where two
 * overlap. `anyCase`: match regardless of letter case (`ZOË@X.JP` is `zoë@x.jp`).
 * Forms shorter than 3 characters are ignored.
 */
export function textMasker(
  forms: readonly string[],
  mark: string,
  anyCase: boolean,
): (text: string) => string {
  const usable = [...new Set(forms)].filter((f) => f.length >= 3).sort((a, b) => b.length - a.length);
  if (usable.length === 0) return (text) => text;
  const pattern = new RegExp(usable.map((f) => f.replace(SPECIAL, '\\$&')).join('|'), anyCase ? 'gi' : 'g');
  return (text) => text.replace(pattern, mark);
}

/** Byte order (SQLite's BINARY, PostgreSQL's "C"), whatever the server's collation: both stores answer alike. */
export function inByteOrder(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a), Buffer.from(b));
}
