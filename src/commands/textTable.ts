/**
 * The one table style of the CLI's list commands (`outbox list`, `deliveries list`): UPPER_SNAKE
 * headers, the same header for the same thing in both (REF, STATE, ATTEMPTS, NEXT_ATTEMPT,
 * LAST_ERROR), "-" for an empty cell so every line splits into the same number of fields (awk,
 * cut), each cell's whitespace folded and cut at 80 characters, columns padded to their widest
 * cell, and one footer naming the option that shows the next page.
 */

/** A column: its header and the field of an item it shows. */
export type Column<K extends string> = readonly [header: string, field: K];

/** The table (pure). */
export function textTable<K extends string>(
  columns: ReadonlyArray<Column<K>>,
  items: ReadonlyArray<Partial<Record<K, unknown>>>,
): string {
  const rows = items.map((item) =>
    columns.map(([, field]) => {
      const text = String(item[field] ?? '')
        .replace(/\s+/g, ' ')
        .trim()
        .slice(0, 80);
      return text === '' ? '-' : text;
    }),
  );
  const all = [columns.map(([header]) => header), ...rows];
  const widths = columns.map((_, i) => Math.max(...all.map((r) => r[i]!.length)));
  return all
    .map((r) =>
      r
        .map((v, i) => v.padEnd(widths[i]!))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

/** A list page as both list commands print it: the table, then where the next page starts, if any (pure). */
export function listText<K extends string>(
  columns: ReadonlyArray<Column<K>>,
  page: { items: ReadonlyArray<Partial<Record<K, unknown>>>; nextCursor: string | null },
): string {
  const more = page.nextCursor ? `\n(more: add --cursor ${page.nextCursor} for the next page)` : '';
  return `${textTable(columns, page.items)}${more}\n`;
}
