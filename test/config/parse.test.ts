import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isPlainKey, parseConfig } from '../../src/config/parse.js';
import { configSchema, keySchema } from '../../src/config/schema.js';

/**
 * The fast key check (parse.ts) stands in for zod on large configs: it must never accept a key zod
 * refuses, and the config it yields must be the one zod yields. Keys are drawn valid, then bent
 * at up to three fields, to values at every edge zod checks.
 */
type Key = Record<string, unknown>;

const secret = fc.constantFrom('0123456789abcdef', 'x'.repeat(43));
const entries = fc.constantFrom<Key[]>(
  [{ kid: '2026-11', secret: 'n'.repeat(32) }],
  [
    { kid: '2026-11', secret: 'n'.repeat(32) },
    { kid: '2026-08', secret: 'o'.repeat(32), verify_until: '2027-06-30T00:00:00Z' },
  ],
);
const valid: fc.Arbitrary<Key> = fc
  .record({
    name: fc.constantFrom('web', 'a.b-c_d', 'n'.repeat(64)),
    value: fc.constantFrom<Key>({ key: 'sk_0123456789abcdef' }, { key_sha256: 'aB'.repeat(32) }),
    kind: fc.constantFrom<Key>(
      { access_type: 'WRITE' },
      { access_type: 'READ', purpose: 'SERVER' },
      { access_type: 'READ', purpose: 'STOREFRONT' },
    ),
    secrets: fc.oneof(
      secret.map((s) => ({ signing_secret: s })),
      entries.map((e) => ({ signing_secrets: e })),
    ),
    extra: fc.record(
      {
        origin_ips: fc.constantFrom(['203.0.113.7'], ['10.0.0.0/8', '2001:db8::/32', '::ffff:10.0.0.0/104']),
        cors_origins: fc.constant(['https://shop.example.com', 'http://x:8080']),
        expires_at: fc.constantFrom('2027-06-30T00:00:00Z', '2027-06-30T00:00:00+02:00'),
      },
      { requiredKeys: [] },
    ),
  })
  .map(({ name, value, kind, secrets, extra }) => ({ name, ...value, ...kind, ...secrets, ...extra }));

/** A field and a value zod may refuse there (or, for some, accept). */
const bend = fc.oneof(
  fc.tuple(fc.constant('name'), fc.constantFrom('-bad', '', 'n'.repeat(65), 12, undefined)),
  fc.tuple(fc.constant('key'), fc.constantFrom('short', 'x'.repeat(15), null, 'sk_0123456789abcdef')),
  fc.tuple(fc.constant('key_sha256'), fc.constantFrom('g'.repeat(64), 'a'.repeat(63), 'a'.repeat(64))),
  fc.tuple(fc.constant('access_type'), fc.constantFrom('read', 'ADMIN', 'READ', 'WRITE', undefined)),
  fc.tuple(fc.constant('purpose'), fc.constantFrom('OTHER', null, 'SERVER', undefined)),
  fc.tuple(fc.constant('signing_secret'), fc.constantFrom('x'.repeat(15), 7, 'x'.repeat(16), undefined)),
  fc.tuple(fc.constant('signing_secret_file'), fc.constant('/run/secret')),
  fc.tuple(
    fc.constant('signing_secrets'),
    fc.constantFrom<unknown>(
      [],
      'x',
      [{ kid: 'a b', secret: 'x'.repeat(16) }],
      [{ kid: '', secret: 'x'.repeat(16) }],
      [{ kid: 'k'.repeat(65), secret: 'x'.repeat(16) }],
      [{ kid: 'a', secret: 'x'.repeat(15) }],
      [{ kid: 'a', secret_file: '/run/s' }],
      [{ kid: 'a', secret: 'x'.repeat(16), verify_until: '2027-06-30T00:00:00Z' }],
      [
        { kid: 'a', secret: 'x'.repeat(16) },
        { kid: 'a', secret: 'y'.repeat(16) },
      ],
      [
        { kid: 'a', secret: 'x'.repeat(16) },
        { kid: 'b', secret: 'y'.repeat(16), verify_until: '2027-06-30' },
      ],
      [{ kid: 'a', secret: 'x'.repeat(16), extra: 1 }],
      undefined,
    ),
  ),
  fc.tuple(
    fc.constant('origin_ips'),
    fc.constantFrom<unknown>(
      ['10.0.0.1/8'],
      ['1.2.3'],
      ['x'],
      [5],
      '10.0.0.1',
      [],
      [' 10.0.0.1 '],
      ['fe80::1%eth0'],
    ),
  ),
  fc.tuple(fc.constant('cors_origins'), fc.constantFrom<unknown>(['https://a/b'], ['*'], 'https://a', [])),
  fc.tuple(fc.constant('expires_at'), fc.constantFrom('2027-06-30', 'soon', '2027-13-01T00:00:00Z', 5)),
  fc.tuple(fc.constant('other'), fc.constant(true)),
);
const key: fc.Arbitrary<unknown> = fc.oneof(
  fc.tuple(valid, fc.array(bend, { maxLength: 3 })).map(([k, bends]) => {
    const out: Key = { ...k };
    for (const [field, value] of bends) {
      if (value === undefined) delete out[field];
      else out[field] = value;
    }
    return out;
  }),
  fc.constantFrom(null, 'key', [], Object.create(null)),
);

describe('the fast key check', () => {
  it('accepts only keys zod accepts, as zod outputs them; and most valid ones', () => {
    let accepted = 0;
    let valid = 0;
    fc.assert(
      fc.property(key, (k) => {
        const zod = keySchema.safeParse(k);
        if (zod.success) valid++;
        if (!isPlainKey(k)) return;
        accepted++;
        expect(zod.success).toBe(true);
        expect(zod.data).toEqual(k);
      }),
      { numRuns: 10_000 },
    );
    expect(accepted).toBeGreaterThan(valid * 0.9);
  });

  it('gives what configSchema gives for a whole config, but for keys of one value (load.ts finds them)', () => {
    const config = fc.record({
      listen: fc.constantFrom<unknown>({ port: 8080 }, { port: 'x' }),
      upstream: fc.constant({ url: 'http://127.0.0.1:3000' }),
      keys: fc.array(key, { maxLength: 3 }),
    });
    fc.assert(
      fc.property(config, (c) => {
        const fast = parseConfig(c);
        const zod = configSchema.safeParse(c);
        const sameValue = (zod.error?.issues ?? []).filter((i) => /has the same value as/.test(i.message));
        if (zod.success) expect(fast.data).toEqual(zod.data);
        else if (sameValue.length === zod.error.issues.length) expect(fast.data?.keys).toEqual(c.keys);
        else expect(fast.error?.issues).toEqual(zod.error.issues);
      }),
      { numRuns: 2000 },
    );
  });
});
