import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { ROOT } from '../helpers/cli.js';

/**
 * README.md and the pages of docs/, read the way the documentation tests need them: prose outside
 * fenced code, its `code spans`, its relative links, and the anchors GitHub gives its headings.
 */

/** A Markdown file of the repository: its path from the root (`docs/api.md`) and its text. */
export interface MarkdownDoc {
  file: string;
  text: string;
}

/** README.md, then every docs/*.md in name order. */
export function documentation(): MarkdownDoc[] {
  const docs = path.join(ROOT, 'docs');
  const pages = existsSync(docs)
    ? readdirSync(docs)
        .filter((name) => name.endsWith('.md'))
        .sort()
        .map((name) => `docs/${name}`)
    : [];
  return ['README.md', ...pages].map((file) => ({
    file,
    text: readFileSync(path.join(ROOT, file), 'utf8'),
  }));
}

/** A doc's lines outside fenced code blocks, with their line numbers. */
export function proseLines(doc: MarkdownDoc): Array<{ n: number; text: string }> {
  let fenced = false;
  const out: Array<{ n: number; text: string }> = [];
  doc.text.split('\n').forEach((text, i) => {
    if (text.trimStart().startsWith('```')) fenced = !fenced;
    else if (!fenced) out.push({ n: i + 1, text });
  });
  return out;
}

/** Every `code span` in a doc's prose, with where it is (`docs/api.md:12`). */
export function codeSpans(doc: MarkdownDoc): Array<{ where: string; span: string }> {
  return proseLines(doc).flatMap(({ n, text }) =>
    [...text.matchAll(/`([^`]+)`/g)].map((m) => ({ where: `${doc.file}:${n}`, span: m[1]! })),
  );
}

/** Every `[text](target)` link in a doc's prose whose target is not a URL with a scheme. */
export function relativeLinks(doc: MarkdownDoc): Array<{ where: string; target: string }> {
  return proseLines(doc).flatMap(({ n, text }) =>
    [...text.replace(/`[^`]*`/g, 'code').matchAll(/\]\(([^)\s]+)\)/g)]
      .map((m) => m[1]!)
      .filter((target) => !/^[a-z][a-z0-9+.-]*:/i.test(target))
      .map((target) => ({ where: `${doc.file}:${n}`, target })),
  );
}

/** A heading's anchor as GitHub makes it: its text without Markdown marks, lower case, spaces as dashes. */
export function githubAnchor(heading: string): string {
  return heading
    .replace(/`/g, '')
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
    .replace(/ /g, '-');
}

/** Every anchor a doc's headings give, repeats numbered (`-1`, `-2`) as GitHub numbers them. */
export function anchorsOf(doc: MarkdownDoc): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const { text } of proseLines(doc)) {
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(text)?.[1];
    if (heading === undefined) continue;
    const base = githubAnchor(heading);
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    anchors.add(count === 0 ? base : `${base}-${count}`);
  }
  return anchors;
}

/**
 * What is wrong with a relative link from `from` (a repository path), or null when it points to a
 * file that exists and, for a Markdown file with a `#fragment`, to one of its headings.
 */
export function brokenLink(from: string, target: string): string | null {
  const [file = '', fragment] = target.split('#', 2);
  const resolved = file ? path.posix.normalize(path.posix.join(path.posix.dirname(from), file)) : from;
  if (resolved.startsWith('..')) return `${target} leaves the repository`;
  const full = path.join(ROOT, resolved);
  if (!existsSync(full)) return `${target}: no file ${resolved}`;
  if (fragment === undefined || !resolved.endsWith('.md')) return null;
  const anchors = anchorsOf({ file: resolved, text: readFileSync(full, 'utf8') });
  return anchors.has(fragment) ? null : `${target}: ${resolved} has no heading #${fragment}`;
}
