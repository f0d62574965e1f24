import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { escapeHtml } from './html.js';

/**
 * README's runbook section as a page, served by the daemon at `GET /runbook`, so the status page's
 * problem links and the alerts' `runbook_url` open the steps from the instance that raised them,
 * with no documentation site to keep in step. README stays the one source; this renders the small
 * subset of Markdown the section uses (headings, paragraphs, lists, `code`, **bold**).
 */

const README = fileURLToPath(new URL('../../README.md', import.meta.url));
const SECTION = '## Runbook';

/** The runbook section's Markdown, or null when README is not installed beside the code. */
export function readRunbookMarkdown(file = README): string | null {
  if (!existsSync(file)) return null;
  const text = readFileSync(file, 'utf8');
  const start = text.indexOf(`\n${SECTION}`);
  if (start < 0) return null;
  const end = text.indexOf('\n## ', start + 1 + SECTION.length);
  return text.slice(start + 1, end < 0 ? undefined : end).trim();
}

const inline = (s: string) =>
  escapeHtml(s)
    .replace(/`([^`]+)`/g, '<code>$1</code>')
    .replace(/\*\*([^*]+)\*\*/g, '<b>$1</b>');

/** A heading's anchor: its text, lower case, spaces as dashes (as GitHub makes them). */
export const anchorOf = (heading: string) =>
  heading
    .toLowerCase()
    .replace(/[^a-z0-9 -]/g, '')
    .trim()
    .replace(/ /g, '-');

/** The section as HTML: every `### code` heading gets `id="code"`. */
export function renderRunbook(markdown: string): string {
  const html: string[] = [];
  let paragraph: string[] = [];
  let list: string[] = [];
  const flush = () => {
    if (paragraph.length) html.push(`<p>${inline(paragraph.join(' '))}</p>`);
    if (list.length) html.push(`<ul>${list.map((item) => `<li>${inline(item)}</li>`).join('')}</ul>`);
    paragraph = [];
    list = [];
  };
  for (const line of markdown.split('\n')) {
    const heading = /^(#{2,3}) (.*)$/.exec(line);
    if (heading) {
      flush();
      const tag = heading[1] === '##' ? 'h1' : 'h2';
      html.push(`<${tag} id="${escapeHtml(anchorOf(heading[2]!))}">${inline(heading[2]!)}</${tag}>`);
    } else if (line.startsWith('- ')) {
      if (paragraph.length) flush();
      list.push(line.slice(2));
    } else if (line.trim() === '') {
      flush();
    } else if (list.length && line.startsWith('  ')) {
      list[list.length - 1] += ` ${line.trim()}`;
    } else {
      paragraph.push(line.trim());
    }
  }
  flush();
  return `<!doctype html><html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1"><title>vcu-sync runbook</title><style>
body{font:16px/1.5 system-ui,sans-serif;margin:1rem;color:#1f2328;max-width:50rem}
h2{margin-top:2rem;font-family:ui-monospace,monospace}h2:target{background:#fff8c5}code{overflow-wrap:anywhere}
</style></head><body>${html.join('\n')}</body></html>`;
}
