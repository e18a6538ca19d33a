/**
 * Aligned plain-text tables for summaries: the first column left-aligned, the others right-aligned.
 *
 * @module
 */

/** Formats `rows` under `header`, columns separated by two spaces, each line indented by `indent`. */
export function formatTextTable(
  header: readonly string[],
  rows: readonly (readonly string[])[],
  indent = "",
): string {
  const all = [header, ...rows];
  const widths = header.map((_, column) => Math.max(...all.map((row) => (row[column] ?? "").length)));
  const line = (row: readonly string[]): string =>
    indent +
    widths
      .map((width, column) => {
        const cell = row[column] ?? "";
        return column === 0 ? cell.padEnd(width) : cell.padStart(width);
      })
      .join("  ")
      .trimEnd();
  return `${all.map(line).join("\n")}\n`;
}

/** Seconds with two decimals: `1.23 s`. */
export function formatSeconds(ms: number): string {
  return `${(ms / 1000).toFixed(2)} s`;
}

/** A whole rate: `1234`. */
export function formatPerSecond(count: number, ms: number): string {
  if (ms <= 0) return "-";
  return String(Math.round((count * 1000) / ms));
}
