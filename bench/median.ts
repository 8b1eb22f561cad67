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
