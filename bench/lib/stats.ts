// Small statistics helpers for benchmark results.
export function median(xs: number[]): number {
  return quantile(xs, 0.5);
}

/** Linear-interpolated quantile over raw samples (never a rounded histogram). */
export function quantile(xs: number[], q: number): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  const pos = (s.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return s[lo]! + (s[hi]! - s[lo]!) * (pos - lo);
}
