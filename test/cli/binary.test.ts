import { readFileSync, writeFileSync } from 'node:fs';
import jwt from 'jsonwebtoken';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashApiKey } from '../../src/auth/api-key.js';
import { ask } from '../helpers/client.js';
import { KEYS, writeConfig } from '../helpers/fixture.js';
import { runCli, serve } from '../helpers/process.js';
import { type RecordingUpstream, startRecordingUpstream } from '../helpers/upstream.js';

let upstream: RecordingUpstream;
beforeAll(async () => {
  upstream = await startRecordingUpstream();
});
afterAll(async () => {
  await upstream.close();
});

describe('the compiled leadgate binary under plain node', () => {
  it('serves: ready line with ports, auth, forwarding', async () => {
    const served = await serve(writeConfig({ upstream: upstream.url }));
    try {
      const token = jwt.sign(
        { lead_id: 'lead-1', exp: Math.floor(Date.now() / 1000) + 600 },
        KEYS.storefront.secret,
      );
      const ok = await ask(served.apiPort, {
        path: '/api/v2/merchant/orders',
        headers: { 'x-apikey': KEYS.storefront.key, 'x-source': 'web', 'x-leadtoken': token },
      });
      expect(ok.status).toBe(200);
      expect(upstream.received.at(-1)?.headers['x-lead-id']).toBe('lead-1');
      const refused = await ask(served.apiPort, {
        path: '/api/v2/merchant/orders',
        headers: { 'x-source': 'web' },
      });
      expect(refused.json().code).toBe('missing_api_key');
      expect((await ask(served.adminPort, { path: '/readyz' })).status).toBe(200);
      await served.waitFor((l) => l.msg === 'request' && l.code === 'missing_api_key');
    } finally {
      await served.stop();
    }
  });

  it('check: exit 0 on a good config', () => {
    const r = runCli(['check', '--config', writeConfig({ upstream: upstream.url })]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/ok \(4 keys, 3 leads from file/);
  });

  it('check: exit 1 naming a bad CIDR and an unset variable, with file and line', () => {
    const path = writeConfig({ upstream: upstream.url });
    const bad = writeConfig({ upstream: upstream.url }).replace(/gateway\.yaml$/, 'bad.yaml');
    writeFileSync(bad, readFileSync(path, 'utf8').replace('[10.9.9.9]', '[10.9.9.0/33]'));
    const r1 = runCli(['check', '--config', bad]);
    expect(r1.code).toBe(1);
    expect(r1.stderr).toMatch(/bad\.yaml:\d+: keys\.3\.origin_ips\.0: "10\.9\.9\.0\/33" is not a CIDR range/);

    writeFileSync(bad, readFileSync(path, 'utf8').replace(`"${KEYS.write.key}"`, '"${WRITE_KEY_FROM_ENV}"'));
    const r2 = runCli(['check', '--config', bad]);
    expect(r2.code).toBe(1);
    expect(r2.stderr).toMatch(
      /bad\.yaml:\d+: keys\.2\.key: environment variable WRITE_KEY_FROM_ENV is not set/,
    );
    expect(
      runCli(['check', '--config', bad], { env: { WRITE_KEY_FROM_ENV: 'sk_from_env_0123456789' } }).code,
    ).toBe(0);
  });

  it('check: warns about a placeholder secret, and fails on it with --strict', () => {
    const dir = writeConfig({
      upstream: upstream.url,
      keys: `keys:\n  - { name: a, key: sk_0123456789abcdef, access_type: WRITE, signing_secret: changeme-changeme-changeme-changeme }\n`,
    });
    const lenient = runCli(['check', '--config', dir]);
    expect(lenient.code).toBe(0);
    expect(lenient.stderr).toMatch(/^warning: .*gateway\.yaml:\d+: keys\.0\.signing_secret: .*placeholder/m);
    expect(lenient.stdout).toMatch(/ok \(1 keys, .*1 warning/);
    const strict = runCli(['check', '--strict', '--config', dir]);
    expect(strict.code).toBe(1);
    expect(strict.stderr).toMatch(/gateway\.yaml:\d+: keys\.0\.signing_secret: .*placeholder/);
    expect(strict.stderr).not.toContain('changeme-changeme');
  });

  it('check: counts every warning when it lists only the first 50', () => {
    const keys = Array.from(
      { length: 60 },
      (_, i) =>
        `  - { name: k${i}, key: sk_0123456789abcdef_${i}, access_type: WRITE, signing_secret: changeme-changeme-changeme-${i} }`,
    );
    const dir = writeConfig({ upstream: upstream.url, keys: `keys:\n${keys.join('\n')}\n` });
    const lenient = runCli(['check', '--config', dir]);
    expect(lenient.code).toBe(0);
    expect(lenient.stderr).toContain('and 10 more warnings like these');
    expect(lenient.stdout).toMatch(/ok \(60 keys, .*, 60 warning\(s\)\)/);
    const strict = runCli(['check', '--strict', '--config', dir]);
    expect(strict.code).toBe(1);
    expect(strict.stderr).toContain('60 problem(s) found');
  });

  it('check: reads $LEADGATE_CONFIG when --config is not given', () => {
    const r = runCli(['check'], { env: { LEADGATE_CONFIG: writeConfig({ upstream: upstream.url }) } });
    expect(r.code).toBe(0);
  });

  it('hash-key: prints sha256 of the key read on stdin', () => {
    const r = runCli(['hash-key'], { input: `${KEYS.server.key}\n` });
    expect(r.code).toBe(0);
    expect(r.stdout.trim()).toBe(hashApiKey(KEYS.server.key));
  });

  it('digest: prints the two headers, secret from the environment only', () => {
    const r = runCli(['digest', '--customer-id', 'cust-1', '--timestamp', '1700000000'], {
      env: { LEADGATE_SIGNING_SECRET: 'storefront-secret-0000000000001' },
    });
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(
      'x-timestamp: 1700000000\nx-leaddigest: c4d7fec335457ba692f63c2609e9ede33c645747a53ea4d091b8b7d551bb1b03\n',
    );
    const none = runCli(['digest', '--customer-id', 'cust-1']);
    expect(none.code).toBe(2);
    expect(none.stderr).toMatch(/LEADGATE_SIGNING_SECRET/);
    expect(runCli(['digest', '--customer-id', 'c', '--secret', 'x']).code).toBe(2);
  });

  it('token: prints an HS256 lead token', () => {
    const r = runCli(['token', '--lead-id', 'lead-7'], {
      env: { LEADGATE_SIGNING_SECRET: KEYS.server.secret },
    });
    expect(r.code).toBe(0);
    const claims = jwt.verify(r.stdout.trim(), KEYS.server.secret, {
      algorithms: ['HS256'],
    }) as jwt.JwtPayload;
    expect(claims.lead_id).toBe('lead-7');
    expect((claims.exp ?? 0) - (claims.iat ?? 0)).toBe(3600);
  });

  it('unknown commands and options are usage errors', () => {
    expect(runCli(['frobnicate']).code).toBe(2);
    expect(runCli(['check', '--nope']).code).toBe(2);
  });

  it('serve: exits 1 with the problems when the config is bad', () => {
    const r = runCli(['serve', '--config', '/nonexistent/gateway.yaml']);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/cannot read/);
  });
});
