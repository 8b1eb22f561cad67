import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signLeadToken } from '../../src/client/index.js';
import { ask } from '../helpers/client.js';
import { writeConfig } from '../helpers/fixture.js';
import { runCli, type Served, serve } from '../helpers/process.js';
import { type RecordingUpstream, startRecordingUpstream } from '../helpers/upstream.js';

/**
 * A config of the size and shape a large deployment runs (issue 24: 100,000 keys, `origin_ips`
 * with addresses and CIDRs, rotating secrets), loaded the fast way (parse.ts, lazy origin
 * matchers): every rule of a sample of keys, the last ones included, holds over real HTTP through
 * `leadgate serve`, and a bad key deep in a large file is reported with its line.
 */
const N = 100_000;
const pad = (i: number) => String(i).padStart(6, '0');
const apiKey = (i: number) => `sk_large_test_${pad(i)}_0000000000`;
const secret = (i: number, kid = 'new') => `${kid}-signing-secret-${pad(i)}-000000000000`;
const KINDS = [
  'access_type: READ, purpose: SERVER',
  'access_type: READ, purpose: STOREFRONT',
  'access_type: WRITE',
];
/** Origins that never hold this machine, and origins that hold it by a CIDR or an IPv4-mapped address. */
const ORIGINS = ['["10.9.0.0/16", "2001:db8::/32"]', '["10.9.9.9", "127.0.0.0/8"]', '["::ffff:127.0.0.1"]'];

/** Key i: its kind by i % 3, rotating when i % 10 is 0, origins by i % 7 when i % 7 < 3. */
function keyLine(i: number): string {
  const secrets =
    i % 10 === 0
      ? `signing_secrets: [{ kid: "2026-11", secret: "${secret(i)}" }, ` +
        `{ kid: "2026-08", secret: "${secret(i, 'old')}", verify_until: "2099-01-01T00:00:00Z" }]`
      : `signing_secret: "${secret(i)}"`;
  const origins = i % 7 < 3 ? `, origin_ips: ${ORIGINS[i % 7]}` : '';
  return `  - { name: k${pad(i)}, key: "${apiKey(i)}", ${KINDS[i % 3]}, ${secrets}${origins} }`;
}

/** The `keys:` block of n keys; `edit` may bend some lines. */
const keysText = (n: number, edit = (_i: number, line: string) => line) =>
  `keys:\n${Array.from({ length: n }, (_, i) => edit(i, keyLine(i))).join('\n')}\n`;

/** What a GET (and a POST) with key i answers, by the §3 rules. */
function expected(i: number): { get: [number, string?]; post: [number, string?] } {
  if (i % 7 === 0) return { get: [403, 'origin_not_allowed'], post: [403, 'origin_not_allowed'] };
  const read = i % 3 !== 2;
  return { get: [200], post: read ? [403, 'method_not_allowed'] : [200] };
}

let upstream: RecordingUpstream;
let served: Served;
beforeAll(async () => {
  upstream = await startRecordingUpstream();
  served = await serve(writeConfig({ upstream: upstream.url, keys: keysText(N) }), {}, 60_000);
}, 90_000);
afterAll(async () => {
  await served?.stop();
  await upstream?.close();
});

describe(`a config of ${N.toLocaleString('en')} keys`, () => {
  it('serves every key it holds; a sample, the last ones included, gets each rule of its own', async () => {
    const ready = served.lines.find((l) => l.msg === 'leadgate ready');
    expect(ready?.keys).toBe(N);
    const sample = [0, 1, 2, 3, 4, 5, 7, 8, 10, 20, 21, 49_999, 50_000, 77_777, N - 3, N - 2, N - 1];
    for (const i of sample) {
      const token = signLeadToken(i % 20 === 0 ? secret(i, 'old') : secret(i), 'lead-1', {
        ...(i % 10 === 0 ? { kid: i % 20 === 0 ? '2026-08' : '2026-11' } : {}),
      });
      const headers = { 'x-apikey': apiKey(i), 'x-source': 'web', 'x-leadtoken': token };
      const want = expected(i);
      for (const [method, [status, code]] of [
        ['GET', want.get],
        ['POST', want.post],
      ] as const) {
        const r = await ask(served.apiPort, { method, path: '/api/v2/merchant/orders', headers });
        expect([i, method, r.status]).toEqual([i, method, status]);
        if (code) expect(r.json().code).toBe(code);
        else expect(upstream.received.at(-1)?.headers['x-api-key-name']).toBe(`k${pad(i)}`);
      }
    }
    const unknown = await ask(served.apiPort, {
      path: '/api/v2/merchant/orders',
      headers: { 'x-apikey': apiKey(N), 'x-source': 'web' },
    });
    expect([unknown.status, unknown.json().code]).toEqual([401, 'invalid_api_key']);
    const wrongSecret = await ask(served.apiPort, {
      path: '/api/v2/merchant/orders',
      headers: {
        'x-apikey': apiKey(N - 2),
        'x-source': 'web',
        'x-leadtoken': signLeadToken(secret(N - 1), 'lead-1'),
      },
    });
    expect([wrongSecret.status, wrongSecret.json().code]).toEqual([401, 'invalid_lead_token']);
  }, 60_000);
});

describe('a bad key deep in a large config', () => {
  const n = 10_000;
  /** The last index below n that `test` holds for. */
  const deep = (test: (i: number) => boolean) => {
    let i = n - 1;
    while (!test(i)) i--;
    return i;
  };
  const check = (edit: (i: number, line: string) => string) => {
    const path = writeConfig({ upstream: 'http://127.0.0.1:9', keys: keysText(n, edit) });
    const text = readFileSync(path, 'utf8');
    const lineOf = (i: number) => text.slice(0, text.indexOf(`name: k${pad(i)},`)).split('\n').length;
    return { ...runCli(['check', '--config', path]), lineOf };
  };

  it('is reported with its line: a key with the value of another (found after the fast check)', () => {
    const twin = n - 5;
    const r = check((i, line) => (i === twin ? line.replace(apiKey(twin), apiKey(3)) : line));
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(
      `:${r.lineOf(twin)}: keys.${twin}.key: key "k${pad(twin)}" has the same value as key "k${pad(3)}"`,
    );
  });

  it('is reported with its line, every problem at once: a CIDR, a rotation, a READ key without purpose', () => {
    const cidr = deep((i) => i % 7 === 1);
    const rotation = deep((i) => i % 10 === 0);
    const read = deep((i) => i % 3 === 0);
    const r = check((i, line) => {
      if (i === cidr) return line.replace('"10.9.9.9"', '"10.9.9.1/16"');
      if (i === rotation) return line.replace('kid: "2026-11"', 'kid: "2026-08"');
      return i === read ? line.replace(', purpose: SERVER', '') : line;
    });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(new RegExp(`:${r.lineOf(cidr)}: keys\\.${cidr}\\.origin_ips\\.0: .*host bits`));
    expect(r.stderr).toMatch(
      new RegExp(`:${r.lineOf(rotation)}: keys\\.${rotation}\\.signing_secrets\\.1\\.kid: .*twice`),
    );
    expect(r.stderr).toMatch(new RegExp(`:${r.lineOf(read)}: keys\\.${read}\\.purpose: `));
  });
});
