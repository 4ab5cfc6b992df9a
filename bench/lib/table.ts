/** Tables of figures: Markdown for bench/RESULTS.md, aligned plain text for the terminal. */

function escapeCell(text: string): string {
  return text.replaceAll('|', '\\|');
}

/** A Markdown table; `right` marks the columns aligned right. */
export function markdownTable(header: readonly string[], rows: readonly (readonly string[])[], right: readonly boolean[]): string {
  const align = right.map((r) => (r ? '---:' : '---'));
  return [header, align, ...rows].map((cells) => `| ${cells.map(escapeCell).join(' | ')} |`).join('\n');
}

/**
 * Rows of cells as aligned plain text, the columns two spaces apart; `right` marks the columns
 * aligned right. Web-standard, so every runtime can print its tables as it measures.
 */
export function textTable(rows: readonly (readonly string[])[], right: readonly boolean[]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((row) => row[i]!.length)));
  return rows
    .map((row) =>
      row
        .map((cell, i) => (right[i] ? cell.padStart(widths[i]!) : cell.padEnd(widths[i]!)))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}
