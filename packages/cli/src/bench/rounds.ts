/**
 * How `rowclaim bench` orders and summarises its measurements: rounds interleave every cell (a
 * form at a worker count, rowclaim and the hand-written loop), the two contenders of a cell
 * take turns going first, and a cell's figure is the median of its rounds.
 *
 * @module
 */

/** The median of `values` (the mean of the middle two for an even count); NaN for none. */
export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1
    ? (sorted[middle] as number)
    : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2;
}

/** The two things a cell measures. */
export type Contender = "rowclaim" | "loop";

/** The order the contenders of a cell run in, in round `round` (0-based): they take turns going first. */
export function contenderOrder(round: number): readonly Contender[] {
  return round % 2 === 0 ? ["rowclaim", "loop"] : ["loop", "rowclaim"];
}

/** Rows per second: `rows` settled in `ms` milliseconds (0 when no time passed). */
export function perSecond(rows: number, ms: number): number {
  return ms > 0 ? (rows * 1000) / ms : 0;
}

/** `a ÷ b` with two decimals, or `-` where it has no meaning. */
export function formatRatio(a: number, b: number): string {
  if (!Number.isFinite(a) || !Number.isFinite(b) || b <= 0) return "-";
  return (a / b).toFixed(2);
}
