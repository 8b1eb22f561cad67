import { readFileSync, writeFileSync } from 'node:fs';
import jwt from 'jsonwebtoken';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { leadDigest, signLeadToken } from '../../src/client/index.js';
import { ConfigError, loadConfig } from '../../src/config/load.js';
import { ask } from '../helpers/client.js';
import { keysYaml, writeConfig } from '../helpers/fixture.js';
import { startTestGateway } from '../helpers/gateway.js';
import { runCli } from '../helpers/process.js';
import { type RecordingUpstream, startRecordingUpstream } from '../helpers/upstream.js';

const KEY = 'sk_rotating_key_0000000000001';
const NEW = 'new-signing-secret-2026-11-0123456789';
const OLD = 'old-signing-secret-2026-08-0123456789';
const OTHER = 'an-unrelated-secret-0000000000000000000';
const iso = (s: number) => new Date(s * 1000).toISOString().replace('.000Z', 'Z');

/** The fixture keys plus `rot`: NEW mints (kid 2026-11), OLD verifies until `until` (kid 2026-08). */
const rotatingKeys = (until: number, withOld = true) => `${keysYaml()}
  - name: rot
    key: "${KEY}"
    access_type: READ
    purpose: STOREFRONT
    signing_secrets:
      - { kid: "2026-11", secret: "${NEW}" }
${withOld ? `      - { kid: "2026-08", secret: "${OLD}", verify_until: "${iso(until)}" }\n` : ''}`;

let upstream: RecordingUpstream;
beforeAll(async () => {
  upstream = await startRecordingUpstream();
});
afterAll(async () => upstream.close());

describe('signing-secret rotation (signing_secrets)', () => {
  it('verifies by exact kid, accepts the old secret until verify_until, mints with the first', async () => {
    const start = Math.floor(Date.now() / 1000);
    const until = start + 3600;
    let clock = start;
    const gw = await startTestGateway(writeConfig({ upstream: upstream.url, keys: rotatingKeys(until) }), {
      now: () => clock,
    });
    try {
      const orders = (token: string) =>
        ask(gw.apiPort, {
          path: '/api/v2/merchant/orders',
          headers: { 'x-apikey': KEY, 'x-source': 'web', 'x-leadtoken': token },
        });
      const token = (secret: string, kid?: string) =>
        signLeadToken(secret, 'lead-1', { now: clock, ttlS: 600, ...(kid ? { kid } : {}) });
      expect((await orders(token(NEW, '2026-11'))).status).toBe(200);
      const oldToken = token(OLD, '2026-08');
      expect((await orders(oldToken)).status).toBe(200);
      expect(upstream.received.at(-1)?.headers['x-lead-id']).toBe('lead-1');
      for (const refused of [
        token(NEW), // no kid, and the key has two secrets
        token(NEW, '2026-09'), // unknown kid
        token(OLD, '2026-11'), // kid of one secret, signed with the other
        token(OTHER, '2026-11'),
        token(NEW, '2026-11 '), // not an exact match
      ]) {
        const r = await orders(refused);
        expect(r.status).toBe(401);
        expect(r.json().code).toBe('invalid_lead_token');
      }

      // the lookup mints with the first secret, its kid in the header; digests verify under both
      const lookup = (secret: string) =>
        ask(gw.apiPort, {
          path: '/api/v2/merchant/leads/x?customer_id=cust-1',
          headers: {
            'x-apikey': KEY,
            'x-source': 'web',
            'x-timestamp': String(clock),
            'x-leaddigest': leadDigest(secret, 'cust-1', clock),
          },
        });
      const minted = (await lookup(OLD)).json().lead_token as string;
      expect(jwt.decode(minted, { complete: true })?.header).toMatchObject({ alg: 'HS256', kid: '2026-11' });
      expect(jwt.verify(minted, NEW, { algorithms: ['HS256'] })).toMatchObject({ lead_id: 'lead-1' });
      expect((await lookup(NEW)).status).toBe(200);

      clock = until; // OLD is dead from verify_until on: tokens (even cached ones) and digests
      expect((await orders(oldToken)).json().code).toBe('invalid_lead_token');
      expect((await lookup(OLD)).json().code).toBe('invalid_digest');
      expect((await orders(token(NEW, '2026-11'))).status).toBe(200);
    } finally {
      await gw.close();
    }
  });

  it('a reload that removes a secret: its tokens are refused at once, cached or not', async () => {
    const path = writeConfig({
      upstream: upstream.url,
      keys: rotatingKeys(Math.floor(Date.now() / 1000) + 3600),
    });
    const gw = await startTestGateway(path);
    try {
      const oldToken = signLeadToken(OLD, 'lead-1', { kid: '2026-08', ttlS: 600 });
      const orders = () =>
        ask(gw.apiPort, {
          path: '/api/v2/merchant/orders',
          headers: { 'x-apikey': KEY, 'x-source': 'web', 'x-leadtoken': oldToken },
        });
      expect((await orders()).status).toBe(200);
      expect((await orders()).status).toBe(200); // now in the verified-token cache
      writeFileSync(path, writeConfigText(path, rotatingKeys(0, false)));
      expect(await gw.reload('test')).toBe('ok');
      const r = await orders();
      expect(r.status).toBe(401);
      expect(r.json().code).toBe('invalid_lead_token');
    } finally {
      await gw.close();
    }
  });

  it('a key with one signing_secret accepts a token that names a kid; one signing_secrets entry accepts none', async () => {
    const gw = await startTestGateway(writeConfig({ upstream: upstream.url, keys: rotatingKeys(0, false) }));
    try {
      const orders = (apikey: string, token: string) =>
        ask(gw.apiPort, {
          path: '/api/v2/merchant/orders',
          headers: { 'x-apikey': apikey, 'x-source': 'web', 'x-leadtoken': token },
        });
      expect((await orders(KEY, signLeadToken(NEW, 'lead-1'))).status).toBe(200);
      expect((await orders(KEY, signLeadToken(NEW, 'lead-1', { kid: 'nope' }))).status).toBe(401);
    } finally {
      await gw.close();
    }
  });

  it('config rules: the first secret may not expire, kids are unique, one form of secret; dead secrets warn', () => {
    const bad = (keys: string) => {
      try {
        loadConfig(writeConfig({ upstream: upstream.url, keys }), { env: {} });
        return [];
      } catch (err) {
        return err instanceof ConfigError
          ? err.problems.map((p) => `${p.field}: ${p.message}`)
          : [String(err)];
      }
    };
    const now = Math.floor(Date.now() / 1000);
    expect(
      bad(rotatingKeys(now + 60).replace('secret: "new', `verify_until: "${iso(now + 60)}", secret: "new`)),
    ).toContain(
      'keys.4.signing_secrets.0.verify_until: the first secret mints tokens: it cannot have verify_until',
    );
    expect(bad(rotatingKeys(now + 60).replace('kid: "2026-08"', 'kid: "2026-11"'))).toContain(
      'keys.4.signing_secrets.1.kid: kid "2026-11" is listed twice',
    );
    expect(
      bad(
        rotatingKeys(now + 60).replace(
          '    signing_secrets:',
          `    signing_secret: "${NEW}"\n    signing_secrets:`,
        ),
      ),
    ).toContain(
      'keys.4.signing_secret: give exactly one of signing_secret, signing_secret_file or signing_secrets',
    );
    const dead = loadConfig(writeConfig({ upstream: upstream.url, keys: rotatingKeys(now - 60) }), {
      env: {},
    });
    expect(dead.warnings.map((w) => `${w.field}: ${w.message}`)).toContainEqual(
      expect.stringMatching(
        /^keys\.4\.signing_secrets\.1\.verify_until: the secret "2026-08" stopped verifying at/,
      ),
    );
  });

  it('leadgate token --kid puts the kid in the header', () => {
    const r = runCli(['token', '--lead-id', 'lead-1', '--kid', '2026-11'], {
      env: { LEADGATE_SIGNING_SECRET: NEW },
    });
    expect(r.code).toBe(0);
    expect(jwt.decode(r.stdout.trim(), { complete: true })?.header).toMatchObject({ kid: '2026-11' });
  });
});

/** The config at `path` with its keys section replaced. */
function writeConfigText(path: string, keys: string): string {
  const text = readFileSync(path, 'utf8');
  return `${text.slice(0, text.indexOf('keys:'))}${keys}`;
}
