import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/cli.js';

/**
 * Issue 27's "the database chosen once": outside its homes (the schema in src/db/, the adapters in
 * src/sqlite/ and src/postgres/, the factories in src/app/) no code names a database. The import
 * rule (`database-named-in-its-homes`, .dependency-cruiser.cjs) keeps the drivers and the adapters
 * out; this keeps their names out of the code itself: an identifier such as `sqliteOutbox` or
 * `pgPool` means a domain still chooses a store. Comments may say why in the database's words.
 */

const HOMES = ['db', 'sqlite', 'postgres', 'app'];
const DATABASE_WORDS = new Set(['sqlite', 'postgres', 'postgresql', 'pg']);

/** The words of an identifier: camelCase, PascalCase, snake_case and SCREAMING_CASE split apart. */
function wordsOf(identifier: string): string[] {
  return identifier
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .replace(/([A-Z]+)([A-Z][a-z])/g, '$1 $2')
    .split(/[\s_$]+/)
    .filter(Boolean)
    .map((w) => w.toLowerCase());
}

/** Where `source` names a database in code: identifiers made of a database's word, and `ctx.database`. */
function databaseNamesIn(source: string): string[] {
  const scanner = ts.createScanner(ts.ScriptTarget.Latest, true, ts.LanguageVariant.Standard, source);
  const found: string[] = [];
  const recent: string[] = [];
  // Open braces inside each `${` of the template literals being read: a `}` that closes a `${`
  // resumes the literal's text, which is not code.
  const templates: number[] = [];
  for (let token = scanner.scan(); token !== ts.SyntaxKind.EndOfFileToken; token = scanner.scan()) {
    if (token === ts.SyntaxKind.TemplateHead) templates.push(0);
    else if (token === ts.SyntaxKind.OpenBraceToken && templates.length > 0)
      templates[templates.length - 1]! += 1;
    else if (token === ts.SyntaxKind.CloseBraceToken && templates.length > 0) {
      if (templates[templates.length - 1] === 0) {
        if (scanner.reScanTemplateToken(false) === ts.SyntaxKind.TemplateTail) templates.pop();
        continue;
      }
      templates[templates.length - 1]! -= 1;
    }
    const text = scanner.getTokenText();
    recent.push(text);
    if (recent.length > 3) recent.shift();
    if (token !== ts.SyntaxKind.Identifier) continue;
    const line = source.slice(0, scanner.getTokenStart()).split('\n').length;
    if (wordsOf(text).some((w) => DATABASE_WORDS.has(w))) found.push(`${line}: ${text}`);
    if (recent.join('') === 'ctx.database') found.push(`${line}: ctx.database`);
  }
  return found;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(full);
    return entry.name.endsWith('.ts') ? [full] : [];
  });
}

describe('the database named only in its homes', () => {
  it('finds a database named in code, and not in a comment or a string', () => {
    const source = [
      "// SQLite's group commit answers after the fsync; PostgreSQL's COMMIT does the same.",
      'const sqliteOutbox = 1;',
      'const pgPool = 2, upgrade = 3, PG_TIMEOUT = 4;',
      "const why = 'on PostgreSQL the rows are locked';",
      // biome-ignore lint/suspicious/noTemplateCurlyInString: the source read has a template literal
      'const reach = `${ctx.database} and postgres ${{ a: 1 }.a} sqlite`;',
      'function after() { const pgLate = 5; }',
    ].join('\n');
    expect(databaseNamesIn(source)).toEqual([
      '2: sqliteOutbox',
      '3: pgPool',
      '3: PG_TIMEOUT',
      '5: ctx.database',
      '6: pgLate',
    ]);
  });

  it('names none outside src/db/, src/sqlite/, src/postgres/ and src/app/', () => {
    const src = path.join(ROOT, 'src');
    const named = sourceFiles(src)
      .filter((file) => !HOMES.includes(path.relative(src, file).split(path.sep)[0] ?? ''))
      .flatMap((file) =>
        databaseNamesIn(readFileSync(file, 'utf8')).map((at) => `${path.relative(ROOT, file)}:${at}`),
      );
    expect(named).toEqual([]);
  });
});
