import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { hashApiKey } from '../../src/auth/api-key.js';
import { ConfigError, loadConfig } from '../../src/config/load.js';
import { locate } from '../../src/config/problems.js';

function write(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'leadgate-config-'));
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return join(dir, 'gateway.yaml');
}

const BASE = `listen: { port: 8080 }
upstream: { url: http://127.0.0.1:3000 }
`;
const KEY = `  - name: web
    key: sk_0123456789abcdef
    access_type: READ
    purpose: STOREFRONT
    signing_secret: 0123456789abcdef0123
`;

function problems(path: string, env: NodeJS.ProcessEnv = {}): string[] {
  try {
    loadConfig(path, { env });
  } catch (err) {
    if (err instanceof ConfigError) return err.message.split('\n');
    throw err;
  }
  return [];
}

describe('loadConfig', () => {
  it('resolves a minimal config with every default', () => {
    const config = loadConfig(write({ 'gateway.yaml': `${BASE}keys:\n${KEY}` }), { env: {} });
    expect(config.admin).toEqual({ host: '0.0.0.0', port: 9090, tls: null, proxyProtocol: null });
    expect(config.digest).toEqual({ maxSkewS: 300, singleUse: false, onStoreError: 'deny' });
    expect(config.workers).toBe(1);
    expect(config.state).toEqual({ redis: null });
    expect(config.rateLimits).toEqual({ onStoreError: 'local', policies: [] });
    expect(config.tracing).toEqual({ otlpEndpoint: null, sampleRatio: null });
    expect(config.leadToken.ttlS).toBe(3600);
    expect(config.shutdown).toEqual({ delayS: 5, timeoutS: 25 });
    expect(config.limits.maxHeaderBytes).toBe(16384);
    expect(config.leads).toEqual({ kind: 'file', file: null, records: [] });
    const key = config.keys.get(hashApiKey('sk_0123456789abcdef'));
    expect(key).toMatchObject({ name: 'web', access: 'READ', purpose: 'STOREFRONT', needsLead: true });
    expect(key?.secret.type).toBe('secret');
    expect(Object.isFrozen(config)).toBe(true);
    expect(Object.isFrozen(config.limits)).toBe(true);
  });

  it('substitutes ${VAR}, reads secret files and key_sha256, resolves paths against the config folder', () => {
    const path = write({
      'gateway.yaml': `${BASE}leads: { file: people.yaml }
keys:
  - name: a
    key: \${A_KEY}
    access_type: WRITE
    signing_secret_file: secret.txt
  - name: b
    key_sha256: ${hashApiKey('sk_b_0123456789abcdef').toUpperCase()}
    access_type: READ
    purpose: SERVER
    signing_secret: \${B_SECRET}
    origin_ips: [203.0.113.7, 198.51.100.0/24, "2001:db8::/32"]
`,
      'secret.txt': 'file-secret-0123456789\n',
      'people.yaml': 'leads:\n  - { _id: l1, customer_id: c1, tier: gold }\n',
    });
    const config = loadConfig(path, {
      env: { A_KEY: 'sk_a_0123456789abcdef', B_SECRET: 'b-secret-0123456789' },
    });
    const a = config.keys.get(hashApiKey('sk_a_0123456789abcdef'));
    expect(a?.secret.export().toString()).toBe('file-secret-0123456789');
    expect(a?.purpose).toBeNull();
    const b = config.keys.get(hashApiKey('sk_b_0123456789abcdef'));
    expect(b?.origins?.size).toBe(3);
    expect(config.leads).toMatchObject({
      kind: 'file',
      records: [{ _id: 'l1', customer_id: 'c1', tier: 'gold' }],
    });
    expect(config.watchedFiles).toHaveLength(3);
  });

  it('names an unset variable, with its line', () => {
    const out = problems(
      write({ 'gateway.yaml': `${BASE}keys:\n${KEY.replace('sk_0123456789abcdef', '${NOT_SET}')}` }),
    );
    expect(out).toHaveLength(1);
    expect(out[0]).toMatch(/gateway\.yaml:5: .*NOT_SET is not set/);
  });

  it.each([
    ['\\x24{A_KEY}', 'sk_from_env_0123456789'],
    ['\\u0024{A_KEY}', 'sk_from_env_0123456789'],
    ['\\U00000024{A_KEY}', 'sk_from_env_0123456789'],
  ])('substitutes a variable whose $ is a YAML escape ("%s"), as it does a plain one', (spelled, value) => {
    const text = `${BASE}keys:\n${KEY.replace('sk_0123456789abcdef', `"${spelled}"`)}`;
    expect(text).not.toContain('$');
    const config = loadConfig(write({ 'gateway.yaml': text }), { env: { A_KEY: value } });
    expect(config.keys.findByValue(value)?.name).toBe('web');
  });

  it('names a bad CIDR with its file, line and field', () => {
    const out = problems(
      write({ 'gateway.yaml': `${BASE}keys:\n${KEY}    origin_ips: [10.0.0.0/8, 10.0.0.0/33]\n` }),
    );
    expect(out.join('\n')).toMatch(
      /gateway\.yaml:9: keys\.0\.origin_ips\.1: "10\.0\.0\.0\/33" is not a CIDR range/,
    );
  });

  it('reports every problem at once', () => {
    const yaml = `listen: { port: 8080, colour: blue }
upstream: { url: ftp://nowhere }
client_ip: { trusted_proxies: [not-an-ip] }
keys:
  - { name: a, key: sk_0123456789abcdef, access_type: READ, signing_secret: 0123456789abcdef0123 }
  - { name: a, key: sk_0123456789abcdef, access_type: WRITE, purpose: SERVER, signing_secret: 0123456789abcdef0123 }
  - { name: c, key: short, access_type: READ, purpose: SERVER }
`;
    const out = problems(write({ 'gateway.yaml': yaml })).join('\n');
    expect(out).toMatch(/:1: listen\.colour: unknown field "colour"/);
    expect(out).toMatch(/:2: upstream\.url/);
    expect(out).toMatch(/:5: keys\.0\.purpose: a READ key needs a purpose/);
    expect(out).toMatch(/:6: keys\.1\.purpose: a WRITE key has no purpose/);
    expect(out).toMatch(/:7: keys\.2\.key: an API key must have at least 16 characters/);
    expect(out).toMatch(/:7: keys\.2\.signing_secret: give exactly one/);
  });

  it('refuses duplicate key names and duplicate key values', () => {
    const yaml = `${BASE}client_ip: { trusted_proxies: [10.0.0.0/8, bad] }
keys:
${KEY}${KEY}${KEY.replace('name: web', 'name: other')}`;
    const out = problems(write({ 'gateway.yaml': yaml })).join('\n');
    expect(out).toMatch(/client_ip\.trusted_proxies\.1: "bad" is not an IP address/);
    expect(out).toMatch(/:10: keys\.1\.name: duplicate key name "web"/);
    expect(out).toMatch(/keys\.1\.key: key "web" has the same value as key "web"/);
    expect(out).toMatch(/keys\.2\.key: key "other" has the same value as key "web"/);
    expect(out).not.toContain('sk_0123456789abcdef');
  });

  it('lists an unset variable and every other problem in one run', () => {
    const yaml = `${BASE}client_ip: { trusted_proxies: [bad] }
keys:
  - name: a
    key: \${NOT_SET}
    access_type: READ
    signing_secret: 0123456789abcdef0123
`;
    const out = problems(write({ 'gateway.yaml': yaml }));
    expect(out.join('\n')).toMatch(/:6: keys\.0\.key: environment variable NOT_SET is not set/);
    expect(out.join('\n')).toMatch(/:3: client_ip\.trusted_proxies\.0: "bad" is not an IP address/);
    expect(out.join('\n')).toMatch(/keys\.0\.purpose: a READ key needs a purpose/);
    // The empty value the unset variable left is not reported again as too short.
    expect(out.filter((l) => l.includes('keys.0.key'))).toHaveLength(1);
  });

  it('names an unknown field at its own line, with the known field it is near', () => {
    const yaml = `listen: { port: 8080 }

keys:
  - name: a
    key: sk_0123456789abcdef
    acces_type: READ
    purpose: SERVER
    signing_secret: 0123456789abcdef0123
upstrem: { url: http://127.0.0.1:3000 }
`;
    const out = problems(write({ 'gateway.yaml': yaml })).join('\n');
    expect(out).toMatch(/:9: upstrem: unknown field "upstrem" \(did you mean "upstream"\?\)/);
    expect(out).toMatch(
      /:6: keys\.0\.acces_type: unknown field "acces_type" \(did you mean "access_type"\?\)/,
    );
    expect(out).toMatch(/upstream: required field "upstream" is missing/);
    expect(out).not.toMatch(/expected object, received undefined/);
  });

  it('says what is wrong with an enum value', () => {
    const out = problems(write({ 'gateway.yaml': `${BASE}keys:\n${KEY.replace('READ', 'READONLY')}` })).join(
      '\n',
    );
    expect(out).toMatch(/:6: keys\.0\.access_type: must be one of READ, WRITE/);
  });

  it('gives one plain message per YAML syntax error, with its line', () => {
    const out = problems(
      write({ 'gateway.yaml': `${BASE}keys:\n  - name: a\n     key: x\n   access_type: READ\n` }),
    );
    expect(out).toHaveLength(1);
    expect(out[0]).toMatch(/gateway\.yaml:5: YAML syntax: .*\(/);
    const tabs = problems(write({ 'gateway.yaml': `${BASE}keys:\n\t- name: a\n` }));
    expect(tabs.join('\n')).toMatch(/:4: YAML syntax: .*tabs/);
  });

  it('warns about placeholder and short signing secrets, and loads', () => {
    const yaml = `${BASE}keys:
  - { name: a, key: sk_0123456789abcdef, access_type: WRITE, signing_secret: replace-me-with-a-real-secret-0000 }
  - { name: b, key: sk_0123456789abcdeg, access_type: WRITE, signing_secret: 0123456789abcdef0123 }
  - { name: c, key: sk_0123456789abcdeh, access_type: WRITE, signing_secret: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822c }
`;
    const config = loadConfig(write({ 'gateway.yaml': yaml }), { env: {} });
    expect(config.warnings.every((w) => w.line === null)).toBe(true);
    const located = locate(config.warnings, (f) => readFileSync(f, 'utf8'));
    const warnings = located.map((w) => `${w.line}: ${w.field}: ${w.message}`);
    expect(warnings).toEqual([
      expect.stringMatching(/^4: keys\.0\.signing_secret: .*placeholder/),
      expect.stringMatching(/^5: keys\.1\.signing_secret: .*shorter than 32 bytes/),
    ]);
  });

  it('reports YAML syntax errors and unreadable files with their place', () => {
    expect(problems(write({ 'gateway.yaml': `${BASE}keys: [\n` })).join('\n')).toMatch(/gateway\.yaml:\d+: /);
    expect(
      problems(write({ 'gateway.yaml': `${BASE}leads: { file: nope.yaml }\nkeys:\n${KEY}` })).join('\n'),
    ).toMatch(/:3: leads\.file: cannot read .*nope\.yaml: ENOENT/);
    expect(problems('/nonexistent/gateway.yaml').join('\n')).toMatch(/cannot read/);
  });

  it("reports bad lead records in the leads file, with the leads file's line", () => {
    const out = problems(
      write({
        'gateway.yaml': `${BASE}keys:\n${KEY}`,
        'leads.yaml':
          'leads:\n  - { _id: a, customer_id: c }\n  - { _id: a, customer_id: d }\n  - { customer_id: e }\n',
      }),
    ).join('\n');
    expect(out).toMatch(/leads\.yaml:3: leads\.1\._id: duplicate _id "a"/);
    expect(out).toMatch(/leads\.yaml:4: leads\.2\._id/);
  });

  it.each([
    ['a space', '"lead 1"'],
    ['blanks', '"   "'],
    ['a line break', '"lead-1\\r\\nx: y"'],
    ['a character beyond ASCII', '"lead-\u00e9"'],
    ['129 characters', `"${'a'.repeat(129)}"`],
  ])('refuses a lead record whose _id holds %s, at its line', (_name, id) => {
    const out = problems(
      write({
        'gateway.yaml': `${BASE}keys:\n${KEY}`,
        'leads.yaml': `leads:\n  - { _id: ok, customer_id: c }\n  - { _id: ${id}, customer_id: d }\n`,
      }),
    ).join('\n');
    expect(out).toMatch(/leads\.yaml:3: leads\.1\._id: a lead id is 1-128 visible ASCII/);
  });
});
