/**
 * A plain text table for the CLI's list commands: one line per item, each cell's whitespace folded
 * and cut at 80 characters, columns padded to their widest cell.
 */
export function textTable<K extends string>(
  columns: readonly K[],
  items: ReadonlyArray<Partial<Record<K, unknown>>>,
): string {
  const rows = items.map((item) =>
    columns.map((c) =>
      String(item[c] ?? '')
        .replace(/\s+/g, ' ')
        .slice(0, 80),
    ),
  );
  const all = [columns.map(String), ...rows];
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
