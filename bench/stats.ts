/**
 * Small statistics helpers for the benchmarks.
 */

/**
 * The `p`-th percentile (0..100) of `values` by the nearest-rank method on a sorted copy: the smallest value such
 * that at least p% of the values are at most it. Returns null for an empty list. `values` is not modified.
 */
export function percentile(values: readonly number[], p: number): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length)));
  return sorted[rank - 1]!;
}

/** `numerator / denominator` rounded to 2 decimals, or null when either is missing or the denominator is 0. */
export function ratio(numerator: number | null | undefined, denominator: number | null | undefined): number | null {
  if (
    numerator === null ||
    numerator === undefined ||
    denominator === null ||
    denominator === undefined ||
    denominator === 0
  )
    return null;
  return Math.round((numerator / denominator) * 100) / 100;
}
