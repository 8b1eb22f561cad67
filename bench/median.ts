/**
 * The median: the middle value of an odd count, the mean of the two middle values of an even one
 * (the upper of the two, as this once took, leans every figure of 10 rounds upwards); NaN for none.
 */
export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  if (s.length === 0) return Number.NaN;
  return s.length % 2 === 1 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
}

/**
 * The bounds of the middle half: the medians of the lower and of the upper half, the middle value
 * of an odd count in neither (for 10 values, the 3rd and the 8th). NaN for fewer than two values.
 */
export function middleHalf(xs: readonly number[]): [number, number] {
  const s = [...xs].sort((a, b) => a - b);
  const half = s.length >> 1;
  return [median(s.slice(0, half)), median(s.slice(s.length - half))];
}

/** The median of per-round figures, with the lowest and highest round. */
export function spread(xs: readonly number[]): { median: number; min: number; max: number } {
  return { median: median(xs), min: Math.min(...xs), max: Math.max(...xs) };
}

/** `x` with its sign, `+` included: `text` (x to one decimal unless given). */
export const signed = (x: number, text = x.toFixed(1)) => `${x >= 0 ? '+' : ''}${text}`;

/** Whether `x` µs meets a target of at most `target` µs, as the verdict lines say it. */
export const met = (x: number, target: number) => `target ≤ ${target} µs: ${x <= target ? 'met' : 'not met'}`;
