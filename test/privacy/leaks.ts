import Database from 'better-sqlite3';

/**
 * Hostile personal data and the needles that find it anywhere: each value as it is and in every
 * encoding other software quotes it in, compared without letter case. Written independently of
 * src/common/textForms.ts, so a form the masker forgets is still found here.
 */

/** The personal fields of operation `i`: quotes, backslashes, NUL, markup, unicode. */
export function hostilePeople(i: number) {
  return {
    originUserName: `O'Brien "Bob" \\ Smith-${i}`,
    originUserEmail: `zoë.ñ+${i}@例え.jp`,
    originUserDocId: `Doc\u0000?<b>&${i}`,
    destinationUserName: `Zoë Ñúñez-Lövgren 李小龍 ${i}`,
    destinationUserEmail: `"q\\uote"+${i}@ex-ample.org`,
    destinationUserDocId: `ID/ä+%20 'x'#${i}`,
  };
}

/** Fragments of the values above that no other text of the daemon contains. */
const FRAGMENTS = [`O'Brien`, `Brien "Bob"`, 'zoë.ñ', '例え.jp', 'Ñúñez', '李小龍', 'q\\uote', `ID/ä+`];

const json = (v: string) => JSON.stringify(v).slice(1, -1);
const asciiJson = (v: string) =>
  json(v).replace(/[\u007f-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
const html = (v: string) =>
  v
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;');

/** Every form of `v` a leak could take. */
export function formsOf(v: string): string[] {
  return [
    ...new Set([
      v,
      json(v),
      json(json(v)),
      asciiJson(v),
      encodeURIComponent(v),
      encodeURIComponent(v).replace(/%20/g, '+'),
      html(v),
    ]),
  ];
}

/** Needles for personal data: every value's forms, and the fragments' forms (shared by every person). */
export function personalNeedles(people: ReadonlyArray<Record<string, string>>, fragments = true): string[] {
  const values = people.flatMap((p) => Object.values(p));
  return [...new Set([...values, ...(fragments ? FRAGMENTS : [])].flatMap(formsOf))];
}

/** Needles for an API key: as it is, base64, base64url, upper and lower case, URL-encoded. */
export function keyNeedles(key: string): string[] {
  const b64 = Buffer.from(key).toString('base64');
  return [key, b64, b64.replace(/=+$/, ''), key.toUpperCase(), encodeURIComponent(key)];
}

/** One place a text was found (a table column, a log, an answer). */
export interface Found {
  where: string;
  needle: string;
  excerpt: string;
}

/** Every needle found in `texts` (letter case ignored), with where. */
export function findAll(
  texts: ReadonlyArray<{ where: string; text: string }>,
  needles: readonly string[],
): Found[] {
  const lowered = needles.map((n) => [n, n.toLowerCase()] as const);
  const found: Found[] = [];
  for (const { where, text } of texts) {
    const hay = text.toLowerCase();
    for (const [needle, low] of lowered) {
      const at = hay.indexOf(low);
      if (at >= 0)
        found.push({ where, needle, excerpt: text.slice(Math.max(0, at - 60), at + low.length + 60) });
    }
  }
  return found;
}

/** Every cell of every table of the database file, as `table.column` texts. */
export function everyCell(dbFile: string): Array<{ where: string; text: string }> {
  const db = new Database(dbFile, { readonly: true });
  try {
    const tables = db
      .prepare(`SELECT name FROM sqlite_master WHERE type = 'table'`)
      .pluck()
      .all() as string[];
    const out: Array<{ where: string; text: string }> = [];
    for (const table of tables) {
      for (const row of db.prepare(`SELECT * FROM "${table}"`).all() as Array<Record<string, unknown>>) {
        for (const [column, value] of Object.entries(row)) {
          if (value === null || value === undefined) continue;
          const text = Buffer.isBuffer(value) ? value.toString('utf8') : String(value);
          out.push({ where: `${table}.${column}`, text });
        }
      }
    }
    return out;
  } finally {
    db.close();
  }
}
