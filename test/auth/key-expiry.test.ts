import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { ask } from '../helpers/client.js';
import { KEYS, keysYaml, writeConfig } from '../helpers/fixture.js';
import { startTestGateway } from '../helpers/gateway.js';
import { runCli } from '../helpers/process.js';
import { type RecordingUpstream, startRecordingUpstream } from '../helpers/upstream.js';

const DAY = 86_400;
const iso = (s: number) => new Date(s * 1000).toISOString().replace('.000Z', 'Z');
const nowS = () => Math.floor(Date.now() / 1000);

/** The fixture's keys, plus `retiring` (expires at `at`) and `old` (expired yesterday). */
function keysWithExpiry(at: number): string {
  return `${keysYaml()}
  - { name: retiring, key: "sk_retiring_key_000000000001", access_type: READ, purpose: SERVER, signing_secret: "${KEYS.server.secret}", expires_at: "${iso(at)}" }
  - { name: old, key: "sk_old_key_000000000000000001", access_type: READ, purpose: SERVER, signing_secret: "${KEYS.server.secret}", expires_at: "${iso(nowS() - DAY)}" }
`;
}

let upstream: RecordingUpstream;
beforeAll(async () => {
  upstream = await startRecordingUpstream();
});
afterAll(async () => upstream.close());

describe('key expiry (expires_at)', () => {
  it('refuses a key from its expires_at on with 401 expired_api_key, over HTTP, without a reload', async () => {
    const expiry = nowS() + 3600;
    let clock = nowS();
    const gw = await startTestGateway(writeConfig({ upstream: upstream.url, keys: keysWithExpiry(expiry) }), {
      now: () => clock,
    });
    try {
      const call = (key: string) =>
        ask(gw.apiPort, { path: '/api/v2/merchant/orders', headers: { 'x-apikey': key, 'x-source': 'web' } });
      expect((await call('sk_retiring_key_000000000001')).status).toBe(200);
      const old = await call('sk_old_key_000000000000000001');
      expect(old.status).toBe(401);
      expect(old.json()).toMatchObject({ code: 'expired_api_key', status: 401 });
      expect(old.text).not.toContain('sk_old');
      clock = expiry; // the gateway's clock reaches expires_at
      const now = await call('sk_retiring_key_000000000001');
      expect(now.json().code).toBe('expired_api_key');
      expect((await call(KEYS.server.key)).status).toBe(200);
      const metrics = (await ask(gw.adminPort, { path: '/metrics' })).text;
      expect(metrics).toContain(`leadgate_key_expiry_timestamp_seconds{key="retiring"} ${expiry}`);
      expect(metrics).toMatch(/leadgate_requests_total\{status="401",code="expired_api_key",key="old"\} 1/);
      expect(metrics).not.toContain('leadgate_key_expiry_timestamp_seconds{key="server"}');
    } finally {
      await gw.close();
    }
  });

  it('is valid config when past; check warns for keys expiring within 14 days, --strict fails', () => {
    const soon = writeConfig({ upstream: upstream.url, keys: keysWithExpiry(nowS() + 3 * DAY) });
    const config = loadConfig(soon, { env: {} });
    expect(config.keys.size).toBe(6);
    const messages = config.warnings.map((w) => w.message).join('\n');
    expect(messages).toMatch(/the key expires at .*, in 2 day\(s\)|in 3 day\(s\)/);
    expect(messages).toMatch(/the key expired at .*: requests with it are refused/);
    const check = runCli(['check', '--config', soon]);
    expect(check.code).toBe(0);
    expect(check.stderr).toMatch(/warning: .*keys\.4\.expires_at: the key expires at/);
    expect(runCli(['check', '--strict', '--config', soon]).code).toBe(1);

    const far = loadConfig(writeConfig({ upstream: upstream.url, keys: keysWithExpiry(nowS() + 30 * DAY) }), {
      env: {},
    });
    expect(far.warnings.map((w) => w.field).filter((f) => f.endsWith('expires_at'))).toEqual([
      'keys.5.expires_at',
    ]);
  });

  it('refuses a time that is not RFC 3339', () => {
    const bad = writeConfig({
      upstream: upstream.url,
      keys: keysWithExpiry(nowS()).replace(/expires_at: "[^"]+"/, 'expires_at: "next June"'),
    });
    const r = runCli(['check', '--config', bad]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/keys\.4\.expires_at: must be an RFC 3339 time/);
  });
});
