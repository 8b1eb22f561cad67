import { createHmac, createSecretKey } from 'node:crypto';
import jwt from 'jsonwebtoken';
import { describe, expect, it } from 'vitest';
import { createLeadTokenVerifier, secretFor, signLeadToken } from '../../src/auth/lead-token.js';
import { GatewayError } from '../../src/contract/errors.js';
import { testKey } from '../helpers/key.js';

const NOW = 1_700_000_000;
const SECRET = 'storefront-secret-0000000000001';
const key = testKey({ secret: createSecretKey(Buffer.from(SECRET)) });
const other = testKey({
  name: 'other',
  sha256: 'f'.repeat(64),
  secret: createSecretKey(Buffer.from('other-secret-0000000000')),
});

const b64 = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
// Issued at the frozen clock unless the payload says otherwise (jsonwebtoken would use the real one).
const sign = (payload: object, options: jwt.SignOptions = {}, secret: string = SECRET) =>
  jwt.sign({ iat: NOW, ...payload }, secret, { algorithm: 'HS256', ...options });

/** Signs any header and claims as given, with HS256 over the test secret (no library checks). */
const signRaw = (header: object, payload: object) => {
  const input = `${b64(header)}.${b64(payload)}`;
  return `${input}.${createHmac('sha256', SECRET).update(input).digest('base64url')}`;
};

/** Signs claims given as JSON text (numbers JSON.stringify cannot write), with HS256 over the test secret. */
const signJson = (claims: string) => {
  const input = `${b64({ alg: 'HS256', typ: 'JWT' })}.${Buffer.from(claims).toString('base64url')}`;
  return `${input}.${createHmac('sha256', SECRET).update(input).digest('base64url')}`;
};

describe.each([
  ['with cache', 1000],
  ['without cache', 0],
])('verifyLeadToken (%s)', (_name, cacheSize) => {
  const verify = createLeadTokenVerifier({ ttlS: 3600, maxSkewS: 60, cacheSize });
  const codeOf = (token: string, k = key, now = NOW) => {
    const r = verify(k, token, now);
    return r instanceof GatewayError ? r.code : r.leadId;
  };

  it("accepts an HS256 token from the key's secret, twice", () => {
    const t = sign({ lead_id: 'lead-1', iat: NOW, exp: NOW + 3600 });
    expect(codeOf(t)).toBe('lead-1');
    expect(codeOf(t)).toBe('lead-1');
  });

  it.each([
    ['alg none', () => `${b64({ alg: 'none', typ: 'JWT' })}.${b64({ lead_id: 'lead-1', exp: NOW + 60 })}.`],
    ['HS512', () => sign({ lead_id: 'lead-1', exp: NOW + 60 }, { algorithm: 'HS512' })],
    ['HS384', () => sign({ lead_id: 'lead-1', exp: NOW + 60 }, { algorithm: 'HS384' })],
    ["another key's secret", () => sign({ lead_id: 'lead-1', exp: NOW + 60 }, {}, 'other-secret-0000000000')],
    ['no exp', () => sign({ lead_id: 'lead-1', iat: NOW })],
    // JSON.parse reads 1e400 as Infinity
    ['an exp of 1e400', () => signJson(`{"lead_id":"lead-1","iat":${NOW},"exp":1e400}`)],
    ['a 30-day exp', () => sign({ lead_id: 'lead-1', iat: NOW, exp: NOW + 30 * 86400 })],
    ['no lead_id', () => sign({ sub: 'lead-1', exp: NOW + 60 })],
    ['an empty lead_id', () => sign({ lead_id: '', exp: NOW + 60 })],
    ['a numeric lead_id', () => sign({ lead_id: 42, exp: NOW + 60 })],
    [
      'a string exp',
      () =>
        `${sign({ lead_id: 'x', exp: NOW + 60 }).split('.')[0]}.${b64({ lead_id: 'x', exp: String(NOW + 60) })}.sig`,
    ],
    ['garbage', () => 'not.a.jwt'],
    [
      'a tampered payload',
      () => {
        const [h, , s] = sign({ lead_id: 'lead-1', exp: NOW + 60 }).split('.');
        return `${h}.${b64({ lead_id: 'lead-2', exp: NOW + 60 })}.${s}`;
      },
    ],
    ['a future nbf', () => sign({ lead_id: 'lead-1', exp: NOW + 600, nbf: NOW + 300 })],
    ['an iat ten minutes ahead', () => sign({ lead_id: 'lead-1', iat: NOW + 600, exp: NOW + 900 })],
    ['an iat just past the skew', () => sign({ lead_id: 'lead-1', iat: NOW + 61, exp: NOW + 900 })],
    ['an nbf just past the skew', () => sign({ lead_id: 'lead-1', nbf: NOW + 61, exp: NOW + 900 })],
    ['a string iat', () => signRaw({ alg: 'HS256' }, { lead_id: 'lead-1', iat: 'now', exp: NOW + 900 })],
    [
      'a crit header',
      () =>
        sign(
          { lead_id: 'lead-1', exp: NOW + 60 },
          { header: { alg: 'HS256', crit: ['exp'] } as jwt.JwtHeader },
        ),
    ],
    [
      'b64: false',
      () =>
        sign({ lead_id: 'lead-1', exp: NOW + 60 }, { header: { alg: 'HS256', b64: false } as jwt.JwtHeader }),
    ],
    ['a lead_id with CR LF', () => sign({ lead_id: 'lead-1\r\nx-evil: 1', exp: NOW + 60 })],
    ['a lead_id of blanks', () => sign({ lead_id: '   ', exp: NOW + 60 })],
    ['a lead_id with a space', () => sign({ lead_id: 'lead 1', exp: NOW + 60 })],
    ['a lead_id beyond ASCII', () => sign({ lead_id: 'lead-\u00e9', exp: NOW + 60 })],
    ['a lead_id of 129 characters', () => sign({ lead_id: 'x'.repeat(129), exp: NOW + 60 })],
  ])('refuses %s as invalid_lead_token', (_name, make) => {
    expect(codeOf(make())).toBe('invalid_lead_token');
  });

  it('allows iat and nbf up to the skew ahead (a signer whose clock runs fast)', () => {
    expect(codeOf(sign({ lead_id: 'lead-1', iat: NOW + 60, nbf: NOW + 60, exp: NOW + 900 }))).toBe('lead-1');
  });

  it('accepts a lead id of 128 visible ASCII characters', () => {
    expect(codeOf(sign({ lead_id: '!'.repeat(128), exp: NOW + 60 }))).toBe('!'.repeat(128));
  });

  it('refuses an expired token as expired_lead_token', () => {
    expect(codeOf(sign({ lead_id: 'lead-1', exp: NOW - 1 }))).toBe('expired_lead_token');
    expect(codeOf(sign({ lead_id: 'lead-1', exp: NOW }))).toBe('expired_lead_token');
  });

  it('expires a token it verified earlier, at its exp', () => {
    const t = sign({ lead_id: 'lead-1', exp: NOW + 100 });
    expect(codeOf(t)).toBe('lead-1');
    expect(codeOf(t, key, NOW + 99)).toBe('lead-1');
    expect(codeOf(t, key, NOW + 100)).toBe('expired_lead_token');
  });

  it('gives a verified token its iat, or exp − ttl_s without one (what a revocation compares with)', () => {
    const withIat = verify(key, sign({ lead_id: 'lead-1', iat: NOW - 30, exp: NOW + 600 }), NOW);
    expect(withIat).toMatchObject({ leadId: 'lead-1', iat: NOW - 30 });
    const without = verify(key, signRaw({ alg: 'HS256' }, { lead_id: 'lead-1', exp: NOW + 600 }), NOW);
    expect(without).toMatchObject({ leadId: 'lead-1', iat: NOW + 600 - 3600 });
    // a cached verification keeps it
    expect(verify(key, sign({ lead_id: 'lead-1', iat: NOW - 30, exp: NOW + 600 }), NOW)).toMatchObject({
      iat: NOW - 30,
    });
  });

  it('holds the lifetime limit at ttl + skew', () => {
    expect(codeOf(sign({ lead_id: 'a', exp: NOW + 3660 }))).toBe('a');
    expect(codeOf(sign({ lead_id: 'a', exp: NOW + 3661 }))).toBe('invalid_lead_token');
  });

  it('never lets a token verified for one key pass for another', () => {
    const t = sign({ lead_id: 'lead-1', exp: NOW + 60 });
    expect(codeOf(t, key)).toBe('lead-1');
    expect(codeOf(t, other)).toBe('invalid_lead_token');
  });

  it('holds the lifetime limit again when the clock steps back after a verification', () => {
    const t = sign({ lead_id: 'a', exp: NOW + 3660 });
    expect(codeOf(t)).toBe('a');
    expect(codeOf(t, key, NOW - 1)).toBe('invalid_lead_token');
  });

  it.each([
    ['a string', 'just a string'],
    ['a JSON string', '"lead-1"'],
    ['a JSON array', '["lead-1"]'],
  ])('refuses claims that are %s', (_name, payload) => {
    const input = `${b64({ alg: 'HS256', typ: 'JWT' })}.${Buffer.from(payload).toString('base64url')}`;
    const t = `${input}.${createHmac('sha256', SECRET).update(input).digest('base64url')}`;
    expect(codeOf(t)).toBe('invalid_lead_token');
  });
});

describe('the verification cache (lead_token cache size)', () => {
  const verifier = (cacheSize: number) => createLeadTokenVerifier({ ttlS: 3600, maxSkewS: 60, cacheSize });

  // The same object back is the cached verification: no second signature check.
  it('answers a repeat from the cache until exp, the lifetime limit included (ttl + skew)', () => {
    const verify = verifier(10);
    const t = sign({ lead_id: 'lead-1', exp: NOW + 3660 });
    const first = verify(key, t, NOW);
    expect(first).toMatchObject({ leadId: 'lead-1', exp: NOW + 3660 });
    expect(verify(key, t, NOW)).toBe(first);
    expect(verify(key, t, NOW + 3659)).toBe(first);
    expect(verify(key, t, NOW + 3660)).toMatchObject({ code: 'expired_lead_token' });
  });

  it("answers from the cache only while the verifying secret's verify_until lies ahead", () => {
    const verify = verifier(10);
    const OLD = 'old-signing-secret-2026-08-0123456789';
    const rotating = testKey({
      kid: '2026-11',
      verifiers: [
        { kid: '2026-11', key: createSecretKey(Buffer.from(SECRET)), verifyUntilS: null },
        { kid: '2026-08', key: createSecretKey(Buffer.from(OLD)), verifyUntilS: NOW + 100 },
      ],
    });
    const t = sign({ lead_id: 'lead-1', exp: NOW + 600 }, { keyid: '2026-08' }, OLD);
    const first = verify(rotating, t, NOW);
    expect(first).toMatchObject({ leadId: 'lead-1' });
    expect(verify(rotating, t, NOW + 99)).toBe(first);
    expect(verify(rotating, t, NOW + 100)).toMatchObject({ code: 'invalid_lead_token' });
  });

  it('with size 0, checks the signature every time', () => {
    const verify = verifier(0);
    const t = sign({ lead_id: 'lead-1', exp: NOW + 600 });
    const first = verify(key, t, NOW);
    expect(verify(key, t, NOW)).toEqual(first);
    expect(verify(key, t, NOW)).not.toBe(first);
  });
});

describe('signLeadToken', () => {
  it('signs { lead_id, iat, exp } with HS256 and exp - iat = ttl', () => {
    const { token, exp } = signLeadToken(key.secret, 'lead-1', NOW, 3600);
    const decoded = jwt.decode(token, { complete: true });
    expect(decoded?.header.alg).toBe('HS256');
    expect(decoded?.payload).toEqual({ lead_id: 'lead-1', iat: NOW, exp: NOW + 3600 });
    expect(exp).toBe(NOW + 3600);
    expect(jwt.verify(token, SECRET, { algorithms: ['HS256'], clockTimestamp: NOW })).toMatchObject({
      lead_id: 'lead-1',
    });
  });
  it('names the kid it is given in the header, and no kid otherwise', () => {
    const withKid = signLeadToken(key.secret, 'l', NOW, 3600, undefined, '2026-11').token;
    expect(jwt.decode(withKid, { complete: true })?.header).toEqual({
      alg: 'HS256',
      typ: 'JWT',
      kid: '2026-11',
    });
    const without = signLeadToken(key.secret, 'l', NOW, 3600).token;
    expect(jwt.decode(without, { complete: true })?.header).toEqual({ alg: 'HS256', typ: 'JWT' });
  });
  it('never outlives a cap', () => {
    expect(signLeadToken(key.secret, 'l', NOW, 3600, NOW + 10).exp).toBe(NOW + 10);
    expect(signLeadToken(key.secret, 'l', NOW, 3600, NOW + 99999).exp).toBe(NOW + 3600);
  });
});

describe.each([
  ['with cache', 1000],
  ['without cache', 0],
])('which secret checks a token (%s)', (_name, cacheSize) => {
  const verify = createLeadTokenVerifier({ ttlS: 3600, maxSkewS: 60, cacheSize });
  const NEW = 'new-signing-secret-2026-11-0123456789';
  const OLD = 'old-signing-secret-2026-08-0123456789';
  const secret = (kid: string, value: string, verifyUntilS: number | null = null) => ({
    kid,
    key: createSecretKey(Buffer.from(value)),
    verifyUntilS,
  });
  /** `signing_secrets`: NEW mints, OLD verifies until NOW + 100. */
  const rotating = testKey({
    name: 'rot',
    sha256: 'e'.repeat(64),
    kid: '2026-11',
    verifiers: [secret('2026-11', NEW), secret('2026-08', OLD, NOW + 100)],
  });
  /** `signing_secrets` with one entry, verifying until NOW + 100. */
  const single = testKey({
    name: 'single',
    sha256: 'd'.repeat(64),
    kid: '2026-08',
    verifiers: [secret('2026-08', OLD, NOW + 100)],
  });
  const codeOf = (k: typeof key, token: string, now = NOW) => {
    const r = verify(k, token, now);
    return r instanceof GatewayError ? r.code : r.leadId;
  };
  const claims = { lead_id: 'lead-1', exp: NOW + 600 };

  it('with one signing_secret, uses it whatever kid the token names', () => {
    for (const kid of ['anything', '2026-11', '']) {
      expect(codeOf(key, sign(claims, { keyid: kid }))).toBe('lead-1');
    }
    expect(codeOf(key, signRaw({ alg: 'HS256', kid: 7 }, claims))).toBe('lead-1');
    expect(codeOf(key, sign(claims, { keyid: 'anything' }, 'other-secret-0000000000'))).toBe(
      'invalid_lead_token',
    );
  });

  it('a key without a signing secret checks no token', () => {
    const none = testKey({ name: 'none', sha256: 'c'.repeat(64), verifiers: [] });
    expect(secretFor(none, sign(claims), NOW)).toBeInstanceOf(GatewayError);
    expect(codeOf(none, sign(claims))).toBe('invalid_lead_token');
  });

  it('with signing_secrets, picks the secret by exact kid, only while it is live', () => {
    expect(codeOf(rotating, sign(claims, { keyid: '2026-11' }, NEW))).toBe('lead-1');
    const old = sign(claims, { keyid: '2026-08' }, OLD);
    expect(codeOf(rotating, old)).toBe('lead-1');
    expect(codeOf(rotating, old, NOW + 99)).toBe('lead-1');
    // verify_until ends the secret, and with it a verification cached before
    expect(codeOf(rotating, old, NOW + 100)).toBe('invalid_lead_token');
    expect(codeOf(rotating, sign(claims, { keyid: '2026-08' }, NEW))).toBe('invalid_lead_token');
    expect(codeOf(rotating, sign(claims, { keyid: '2026-09' }, NEW))).toBe('invalid_lead_token');
    expect(codeOf(rotating, signRaw({ alg: 'HS256', kid: 2026 }, claims))).toBe('invalid_lead_token');
  });

  it('with signing_secrets, refuses a token without kid unless the key has one live secret', () => {
    expect(codeOf(rotating, sign(claims, {}, NEW))).toBe('invalid_lead_token');
    const noKid = sign(claims, {}, OLD);
    expect(codeOf(single, noKid)).toBe('lead-1');
    expect(codeOf(single, noKid, NOW + 100)).toBe('invalid_lead_token');
  });

  it.each([
    ['garbage', 'garbage'],
    ['empty', ''],
    ['a header of JSON null', `bnVsbA.${b64(claims)}.sig`],
    ['a header that is not JSON', `bm90IGpzb24.${b64(claims)}.sig`],
  ])('answers a malformed token (%s) against signing_secrets with invalid_lead_token', (_n, token) => {
    expect(codeOf(rotating, token)).toBe('invalid_lead_token');
  });

  it('never lets a cached verification pass for another key', () => {
    const t = sign(claims, { keyid: '2026-11' }, NEW);
    expect(codeOf(rotating, t)).toBe('lead-1');
    expect(codeOf(key, t)).toBe('invalid_lead_token');
  });
});
