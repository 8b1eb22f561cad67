import { execFileSync } from 'node:child_process';
import { createSecretKey } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { computeLeadDigest, createLeadDigestVerifier } from '../../src/auth/lead-digest.js';
import { leadDigest } from '../../src/client/index.js';
import type { GatewayError } from '../../src/contract/errors.js';
import { testKey } from '../helpers/key.js';
import { requires } from '../helpers/optional.js';
import { hasPython } from '../helpers/python.js';

const SECRET = 'storefront-secret-0000000000001';
const key = testKey({ secret: createSecretKey(Buffer.from(SECRET)) });

// Computed outside this code base, with Python's hmac module (see the python3 test below).
const VECTORS: Array<[string, string, string]> = [
  ['cust-1', '1700000000', 'c4d7fec335457ba692f63c2609e9ede33c645747a53ea4d091b8b7d551bb1b03'],
  [
    'gid://shop/Customer/7:9',
    '1700000000',
    'd95146f0787d1fcb1c3491bf4e3fb6d61afd4627d8ef5d574b69bd446a186c65',
  ],
  ['kunde 3 ü', '1700000123', '63211469eec68bcb97e0317a96eaa6caac853549ee362d2158e846c361bca82e'],
  ['a b:c d', '1', '966a9f0d56862d33fdae1c3b666bd5af0d1947f4bbeda25ffac20f9484b00607'],
];

describe('computeLeadDigest', () => {
  it.each(VECTORS)('matches the fixed vector for %j at %s', (customerId, ts, hex) => {
    expect(computeLeadDigest(key.secret, customerId, ts).toString('hex')).toBe(hex);
    expect(leadDigest(SECRET, customerId, Number(ts))).toBe(hex);
  });

  it.runIf(requires('python3', hasPython, 'Debian: apt-get install python3'))(
    'agrees with python3 hmac on colons, unicode and spaces',
    () => {
      const script =
        'import hmac,hashlib,sys\nfor cid in sys.argv[2:]:\n' +
        "  print(hmac.new(sys.argv[1].encode(), (cid+':1700000000').encode(), hashlib.sha256).hexdigest())";
      const ids = ['x:y:z', '顧客 42', ' padded ', 'emoji 🛒'];
      const out = execFileSync('python3', ['-c', script, SECRET, ...ids], { encoding: 'utf8' })
        .trim()
        .split('\n');
      ids.forEach((id, i) => {
        expect(leadDigest(SECRET, id, 1700000000)).toBe(out[i]);
      });
    },
  );
});

describe('verifyLeadDigest', () => {
  const NOW = 1_700_000_000;
  const verify = createLeadDigestVerifier({ maxSkewS: 300 });
  const good = (customerId: string, ts: number) => leadDigest(SECRET, customerId, ts);
  const codeOf = (r: GatewayError | null) => r?.code ?? 'ok';

  it('accepts lower- and upper-case hex', () => {
    const d = good('cust-1', NOW);
    expect(codeOf(verify(key, { digest: d, timestamp: String(NOW), customerId: 'cust-1' }, NOW))).toBe('ok');
    expect(
      codeOf(verify(key, { digest: d.toUpperCase(), timestamp: String(NOW), customerId: 'cust-1' }, NOW)),
    ).toBe('ok');
  });

  it('holds the skew boundary exactly', () => {
    for (const ts of [NOW - 300, NOW + 300]) {
      expect(
        codeOf(verify(key, { digest: good('c', ts), timestamp: String(ts), customerId: 'c' }, NOW)),
      ).toBe('ok');
    }
    for (const ts of [NOW - 301, NOW + 301]) {
      expect(
        codeOf(verify(key, { digest: good('c', ts), timestamp: String(ts), customerId: 'c' }, NOW)),
      ).toBe('stale_timestamp');
    }
  });

  it.each([
    ['no timestamp', undefined, 'invalid_timestamp'],
    ['empty timestamp', '', 'invalid_timestamp'],
    ['fractional', `${NOW}.5`, 'invalid_timestamp'],
    ['negative', `-${NOW}`, 'invalid_timestamp'],
    ['ISO date', '2023-11-14T22:13:20Z', 'invalid_timestamp'],
    ['two headers', [String(NOW), String(NOW)], 'invalid_timestamp'],
    ['a list of one', [String(NOW)], 'invalid_timestamp'],
  ])('refuses %s', (_name, timestamp, code) => {
    expect(codeOf(verify(key, { digest: good('c', NOW), timestamp, customerId: 'c' }, NOW))).toBe(code);
  });

  // Both messages say "seconds": only "milliseconds" tells the hint from the plain refusal.
  it('hints at milliseconds for a timestamp of 12 or more digits, and only then', () => {
    const detail = (timestamp: string | string[] | undefined) =>
      verify(key, { digest: good('c', NOW), timestamp, customerId: 'c' }, NOW)?.detail ?? 'accepted';
    for (const ms of [String(NOW * 1000), '100000000000', String(NOW * 1_000_000)]) {
      expect(detail(ms)).toContain('milliseconds');
    }
    for (const other of [`${NOW * 1000}.5`, `x${NOW * 1000}`, `${NOW * 1000}x`, `-${NOW * 1000}`, 'abc']) {
      expect(detail(other)).not.toContain('milliseconds');
      expect(detail(other)).toContain('seconds');
      expect(detail(other)).not.toContain('required');
    }
    // Node joins repeated headers; a list is not one timestamp, so no hint about its unit.
    expect(detail([String(NOW * 1000)])).not.toContain('milliseconds');
  });

  it('says x-timestamp is required when it is missing or empty', () => {
    for (const missing of [undefined, '']) {
      const r = verify(key, { digest: good('c', NOW), timestamp: missing, customerId: 'c' }, NOW);
      expect(r?.code).toBe('invalid_timestamp');
      expect(r?.detail).toContain('required');
    }
  });

  it('needs customer_id', () => {
    for (const customerId of [null, '']) {
      expect(codeOf(verify(key, { digest: good('c', NOW), timestamp: String(NOW), customerId }, NOW))).toBe(
        'missing_customer_id',
      );
    }
  });

  it('checks against every live secret of the key, and no other', () => {
    const OLD = 'old-signing-secret-2026-08-0123456789';
    const rotating = testKey({
      kid: '2026-11',
      verifiers: [
        { kid: '2026-11', key: createSecretKey(Buffer.from(SECRET)), verifyUntilS: null },
        { kid: '2026-08', key: createSecretKey(Buffer.from(OLD)), verifyUntilS: NOW + 10 },
      ],
    });
    const old = { digest: leadDigest(OLD, 'c', NOW), timestamp: String(NOW), customerId: 'c' };
    const current = { digest: good('c', NOW), timestamp: String(NOW), customerId: 'c' };
    expect(codeOf(verify(rotating, current, NOW))).toBe('ok');
    expect(codeOf(verify(rotating, old, NOW))).toBe('ok');
    expect(codeOf(verify(rotating, old, NOW + 10))).toBe('invalid_digest');
    expect(codeOf(verify(rotating, current, NOW + 10))).toBe('ok');
  });

  it.each([
    ['another customer', good('other', NOW)],
    ['another timestamp', good('c', NOW - 1)],
    ['another secret', leadDigest('another-secret-000000000', 'c', NOW)],
    ['truncated', good('c', NOW).slice(0, 63)],
    ['not hex', 'z'.repeat(64)],
    ['base64 of the right bytes', Buffer.from(good('c', NOW), 'hex').toString('base64')],
    ['empty', ''],
    ['the valid digest with one hex digit more', `${good('c', NOW)}0`],
    ['the valid digest with one other character more', `${good('c', NOW)}g`],
    ['the valid digest behind one hex digit', `0${good('c', NOW)}`],
    ['the valid digest behind other characters', `zz${good('c', NOW)}`],
  ])('refuses a digest for %s', (_name, digest) => {
    const r = verify(key, { digest, timestamp: String(NOW), customerId: 'c' }, NOW);
    expect(r?.code).toBe('invalid_digest');
    expect(r?.detail).not.toContain(good('c', NOW));
  });
});
