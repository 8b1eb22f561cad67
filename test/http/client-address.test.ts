import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeConfig } from '../helpers/fixture.js';
import { startTestGateway } from '../helpers/gateway.js';
import { raw, request, responses } from '../helpers/raw.js';
import { type RecordingUpstream, startRecordingUpstream } from '../helpers/upstream.js';

/**
 * CONTRACT §3.3 behind a trusted proxy (127.0.0.1): the client address is the right-most untrusted
 * X-Forwarded-For entry, IPv4-mapped IPv6 counts as IPv4, and nothing else does. Each case was
 * found by an adversarial probe, which got 200 where the rule says 403, or a fresh rate-limit
 * bucket for a new spelling of one address.
 */
const LOCAL = 'sk_local_only_key_000000000001';
const OFFICE = 'sk_office_key_00000000000000002';
const KEYS_YAML = `keys:
  - { name: local, key: "${LOCAL}", access_type: READ, purpose: SERVER, signing_secret: "local-secret-000000000000000001", origin_ips: [127.0.0.1] }
  - { name: office, key: "${OFFICE}", access_type: WRITE, signing_secret: "office-secret-00000000000000002", origin_ips: [198.51.100.0/24, "2001:db8::/32"] }
`;
const POLICY = 'rate_limits: { policies: [{ name: perip, by: client_ip, limit: 2, window_s: 3600 }] }';

let upstream: RecordingUpstream;
let gw: Awaited<ReturnType<typeof startTestGateway>>;
beforeAll(async () => {
  upstream = await startRecordingUpstream();
  gw = await startTestGateway(
    writeConfig({
      upstream: upstream.url,
      keys: KEYS_YAML,
      extra: `client_ip: { trusted_proxies: [127.0.0.1] }\n${POLICY}`,
    }),
  );
});
afterAll(async () => {
  await gw.close();
  await upstream.close();
});

async function send(key: string, forwardedFor: string) {
  const before = upstream.arrived.length;
  const headers = [
    ['Host', '127.0.0.1'],
    ['x-apikey', key],
    ['x-source', 'web'],
    ['X-Forwarded-For', forwardedFor],
  ] as const;
  const result = await raw(gw.apiPort, [request('GET /api/v2/merchant/orders HTTP/1.1', headers)], {
    until: (t) => responses(t).length >= 1,
  });
  const answer = responses(result.text)[0];
  return { status: answer?.status, body: answer?.body ?? '', reached: upstream.arrived.length - before };
}

describe('client address behind a trusted proxy', () => {
  it.each([
    ['the deprecated IPv4-compatible ::a.b.c.d is not the IPv4 address', LOCAL, '::127.0.0.1'],
    ['a loose dotted part inside ::ffff: is no address', LOCAL, '::ffff:127.000.0.1'],
    ['a hex dotted part inside ::ffff: is no address', LOCAL, '::ffff:0x7f.0.0.1'],
    ['::a.b.c.d is not a trusted proxy to walk past', OFFICE, '198.51.100.20, ::127.0.0.1'],
    ['a loose spelling is not a trusted proxy to walk past', OFFICE, '198.51.100.21, ::ffff:127.000.0.1'],
  ])('%s: 403, nothing forwarded', async (_name, key, forwardedFor) => {
    const { status, body, reached } = await send(key, forwardedFor);
    expect(status).toBe(403);
    expect(JSON.parse(body).code).toBe('origin_not_allowed');
    expect(reached).toBe(0);
  });

  it('still reads ::ffff:a.b.c.d as the IPv4 address', async () => {
    expect((await send(LOCAL, '::ffff:127.0.0.1')).status).toBe(200);
  });

  it('gives one address one rate-limit bucket, whatever zone it is written with', async () => {
    expect((await send(OFFICE, '2001:db8::99')).status).toBe(200);
    expect((await send(OFFICE, '2001:db8::99%a')).status).toBe(200);
    const third = await send(OFFICE, '2001:db8::99%b');
    expect(third.status).toBe(429);
    expect(third.reached).toBe(0);
  });
});
