import { z } from 'zod';
import { bucketOf } from '../gcra/gcra.js';
import type { RateLimitsConfig } from './settings.js';

const positive = z.number().int().positive();
const nonNegative = z.number().int().min(0);

/** One rate-limit policy (CONTRACT §8): GCRA per `by`, for the keys it names or all keys. */
const policySchema = z.strictObject({
  name: z.string().regex(/^[A-Za-z0-9_.-]{1,64}$/, 'must be 1-64 letters, digits, "_", "." or "-"'),
  by: z.enum(['key', 'client_ip', 'lead']),
  limit: positive,
  window_s: positive,
  burst: nonNegative.default(0),
  keys: z.array(z.string().min(1)).min(1).optional(),
});

/** Policy names are unique (a 429 names one), and `keys` name keys that exist. */
export function policiesFit(
  raw: {
    rate_limits: { policies: ReadonlyArray<z.infer<typeof policySchema>> };
    keys: ReadonlyArray<{ name: string }>;
  },
  ctx: z.RefinementCtx,
): void {
  // built only when a policy names keys: a config may hold 100,000
  let keyNames: ReadonlySet<string> | null = null;
  const seen = new Set<string>();
  raw.rate_limits.policies.forEach((p, i) => {
    if (seen.has(p.name)) {
      ctx.addIssue({
        code: 'custom',
        path: ['rate_limits', 'policies', i, 'name'],
        message: `duplicate policy name "${p.name}"`,
      });
    }
    seen.add(p.name);
    p.keys?.forEach((name, j) => {
      keyNames ??= new Set(raw.keys.map((k) => k.name));
      if (!keyNames.has(name)) {
        ctx.addIssue({
          code: 'custom',
          path: ['rate_limits', 'policies', i, 'keys', j],
          message: `no key is named "${name}"`,
        });
      }
    });
  });
}

/** `rate_limits:` — GCRA policies checked after §3, and what to do when the store cannot answer. */
export const rateLimitsSchema = z
  .strictObject({
    on_store_error: z.enum(['local', 'allow', 'deny']).default('local'),
    policies: z.array(policySchema).default([]),
  })
  .default({ on_store_error: 'local', policies: [] });

/** What each `rate_limits:` field means, for `leadgate docs` and docs/reference/config.md. */
export const rateLimitsMeanings: Readonly<Record<string, string>> = {
  'rate_limits.on_store_error':
    '`local` (a per-process bucket until the store answers again), `allow` or `deny` (503 `store_unavailable`)',
  'rate_limits.policies[]':
    'GCRA policies, checked after every §3 check passed, before the lookup and forwarding',
  'rate_limits.policies[].name': 'named in `RateLimit-Policy`, `RateLimit` and the 429',
  'rate_limits.policies[].by':
    '`key` (the key name), `client_ip` (as for `origin_ips`), or `lead` (the proven lead or customer; requests without a lead credential are not counted)',
  'rate_limits.policies[].limit': 'requests per window at the steady rate',
  'rate_limits.policies[].window_s': 'the window: one request every `window_s / limit` seconds',
  'rate_limits.policies[].burst': 'extra requests admitted at once from idle, above `limit`',
  'rate_limits.policies[].keys': 'the key names it applies to; every key when absent',
};

/** `rate_limits:` as validated → resolved: each policy's GCRA bucket computed once. */
export function rateLimitsOf(raw: z.infer<typeof rateLimitsSchema>): RateLimitsConfig {
  return {
    onStoreError: raw.on_store_error,
    policies: raw.policies.map((p) => ({
      name: p.name,
      by: p.by,
      limit: p.limit,
      windowS: p.window_s,
      burst: p.burst,
      keys: p.keys === undefined ? null : new Set(p.keys),
      bucket: bucketOf(p.limit, p.window_s, p.burst),
    })),
  };
}
