/**
 * GCRA (the generic cell rate algorithm): one number per bucket, the theoretical arrival time
 * (TAT) of the next request. From idle a bucket admits `limit + burst` requests at once, then one
 * every `window / limit`. All times are whole microseconds.
 */
export interface Bucket {
  /** T: the spacing between requests at the steady rate (`window_s / limit`). */
  readonly emissionUs: number;
  /** τ: how far ahead of the steady rate a client may run (`(limit + burst − 1) · T`). */
  readonly toleranceUs: number;
}

export interface GcraVerdict {
  readonly allowed: boolean;
  /** The TAT to keep (unchanged when refused). */
  readonly tatUs: number;
  /** Requests still admissible right now, after this one (never negative). */
  readonly remaining: number;
  /** Refused or none left: until one more is admitted; else until the bucket is full again. */
  readonly waitUs: number;
}

export function bucketOf(limit: number, windowS: number, burst: number): Bucket {
  const emissionUs = Math.max(1, Math.round((windowS * 1e6) / limit));
  return { emissionUs, toleranceUs: (limit + burst - 1) * emissionUs };
}

/** One request against a bucket whose TAT is `tatUs` (undefined: idle) at `nowUs`. */
export function gcra(tatUs: number | undefined, nowUs: number, b: Bucket): GcraVerdict {
  const tat = tatUs === undefined || tatUs < nowUs ? nowUs : tatUs;
  const allowAt = tat - b.toleranceUs;
  if (nowUs < allowAt) return { allowed: false, tatUs: tat, remaining: 0, waitUs: allowAt - nowUs };
  const next = tat + b.emissionUs;
  const remaining = Math.floor((b.toleranceUs - (next - nowUs)) / b.emissionUs) + 1;
  if (remaining <= 0) {
    return { allowed: true, tatUs: next, remaining: 0, waitUs: next - b.toleranceUs - nowUs };
  }
  return { allowed: true, tatUs: next, remaining, waitUs: next - nowUs };
}
