/**
 * Tables for people: columns padded to their widest cell, each row within 100 characters. Where the
 * cells would be wider, the widest columns are cut first, never below their heading, and each cut
 * cell ends in `…`; a command's --json gives every value whole.
 */

/** The widest a table's rows may be. */
export const TABLE_WIDTH = 100;

const GAP = 2;

/** `cell` within `width` characters: cut, with `…` as its last, when it is longer. */
export function fit(cell: string, width: number): string {
  return cell.length <= width ? cell : `${cell.slice(0, width - 1)}…`;
}

/** Rows (the first is the heading) as columns padded to their widest cell, within `width`. */
export function columns(rows: readonly (readonly string[])[], width = TABLE_WIDTH): string {
  const head = rows[0]!;
  const widths = head.map((_, i) => Math.max(...rows.map((row) => row[i]!.length)));
  let excess = widths.reduce((sum, w) => sum + w, 0) + GAP * (widths.length - 1) - width;
  // One character at a time from the widest column that is still wider than its heading.
  while (excess > 0) {
    let widest = -1;
    for (const [i, w] of widths.entries()) if (w > head[i]!.length && (widest < 0 || w > widths[widest]!)) widest = i;
    if (widest < 0) break;
    widths[widest]!--;
    excess--;
  }
  return rows
    .map((row) => `${row.map((cell, i) => (i === row.length - 1 ? fit(cell, widths[i]!) : fit(cell, widths[i]!).padEnd(widths[i]! + GAP))).join('')}\n`)
    .join('');
}
