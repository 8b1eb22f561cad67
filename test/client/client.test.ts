import { createSecretKey } from 'node:crypto';
import jwt from 'jsonwebtoken';
import { describe, expect, it } from 'vitest';
import { computeLeadDigest } from '../../src/auth/lead-digest.js';
import { createLeadTokenVerifier, signLeadToken as gatewaySign } from '../../src/auth/lead-token.js';
import { LeadgateClientError, leadDigest, signLeadToken } from '../../src/client/index.js';
import { testKey } from '../helpers/key.js';

const SECRET = 'a-merchant-signing-secret-32-bytes!';

describe('leadgate/client (no dependencies)', () => {
  it('signs the token jsonwebtoken signs, byte for byte', () => {
    for (const [leadId, now, ttl] of [
      ['lead-1', 1_700_000_000, 3600],
      ['lëad/ü 2', 1_800_000_000, 60],
    ] as const) {
      expect(signLeadToken(SECRET, leadId, { now, ttlS: ttl })).toBe(
        gatewaySign(SECRET, leadId, now, ttl).token,
      );
      expect(signLeadToken(SECRET, leadId, { now, ttlS: ttl, kid: '2026-11' })).toBe(
        gatewaySign(SECRET, leadId, now, ttl, undefined, '2026-11').token,
      );
    }
  });

  it("mints tokens the gateway's verifier accepts, and puts kid in the header when given", () => {
    const now = Math.floor(Date.now() / 1000);
    const verify = createLeadTokenVerifier({ ttlS: 3600, maxSkewS: 60, cacheSize: 10 });
    const key = testKey({ secret: createSecretKey(Buffer.from(SECRET)) });
    const token = signLeadToken(SECRET, 'lead-9', { now });
    expect(verify(key, token, now)).toMatchObject({ leadId: 'lead-9' });
    const withKid = signLeadToken(SECRET, 'lead-9', { now, kid: '2026-11' });
    expect(jwt.decode(withKid, { complete: true })?.header).toEqual({
      alg: 'HS256',
      typ: 'JWT',
      kid: '2026-11',
    });
    expect(jwt.verify(withKid, SECRET, { algorithms: ['HS256'] })).toMatchObject({ lead_id: 'lead-9' });
  });

  it("computes the gateway's digest", () => {
    expect(leadDigest(SECRET, 'cust-1', 1_700_000_000)).toBe(
      computeLeadDigest(SECRET, 'cust-1', 1_700_000_000).toString('hex'),
    );
  });

  it('refuses a missing secret with a clear error that names the variable, not a raw TypeError', () => {
    for (const call of [
      () => signLeadToken(undefined as unknown as string, 'lead-1'),
      () => leadDigest('', 'c', 1),
    ]) {
      expect(call).toThrow(LeadgateClientError);
      expect(call).toThrow(/signing secret is missing.*LEADGATE_SIGNING_SECRET/);
    }
    expect(() => signLeadToken(SECRET, '')).toThrow(/leadId must be a non-empty string/);
    expect(() => leadDigest(SECRET, 'c', 1.5)).toThrow(/whole unix seconds/);
  });

  it('imports nothing but node:crypto', async () => {
    const { readFileSync } = await import('node:fs');
    const source = readFileSync(new URL('../../packages/client/src/index.ts', import.meta.url), 'utf8');
    expect([...source.matchAll(/^import .* from '([^']+)';$/gm)].map((m) => m[1])).toEqual(['node:crypto']);
  });
});
