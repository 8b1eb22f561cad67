import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config/load.js';

/** CONTRACT §9, §12: `state.redis` is exactly one of `url`, `sentinel` or `cluster`, with a password in either form. */
function write(redis: string, files: Record<string, string> = {}): string {
  const dir = mkdtempSync(join(tmpdir(), 'leadgate-redis-config-'));
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  const path = join(dir, 'gateway.yaml');
  writeFileSync(
    path,
    `listen: { port: 8080 }
upstream: { url: http://127.0.0.1:3000 }
state:
  redis:
${redis}
keys:
  - { name: web, key: sk_0123456789abcdef, access_type: READ, purpose: SERVER, signing_secret: 0123456789abcdef0123 }
`,
  );
  return path;
}

function problems(path: string): string[] {
  try {
    loadConfig(path, { env: {} });
  } catch (err) {
    if (err instanceof ConfigError) return err.message.split('\n');
    throw err;
  }
  return [];
}

describe('state.redis', () => {
  it('takes sentinel with its nodes (IPv6 included) and reads password_file beside the config', () => {
    const path = write(
      `    sentinel: { master: mymaster, nodes: ["sentinel-0:26379", "[::1]:26380"] }
    password_file: redis-password`,
      { 'redis-password': 's3cret-password\n' },
    );
    const redis = loadConfig(path, { env: {} }).state.redis;
    expect(redis?.target).toEqual({
      kind: 'sentinel',
      master: 'mymaster',
      nodes: [
        { host: 'sentinel-0', port: 26379 },
        { host: '::1', port: 26380 },
      ],
    });
    expect(redis?.password).toBe('s3cret-password');
    expect(redis?.timeoutMs).toBe(50);
  });

  it('refuses url and sentinel together, neither, both passwords, and a node without a port', () => {
    const both = problems(
      write(`    url: redis://127.0.0.1:6379
    sentinel: { master: m, nodes: ["s:26379"] }`),
    );
    expect(both.join('\n')).toMatch(/state\.redis.*exactly one of url .*, sentinel .* or cluster/);
    expect(problems(write('    timeout_ms: 50')).join('\n')).toMatch(/exactly one of url/);
    const passwords = problems(
      write(`    url: redis://127.0.0.1:6379
    password: a
    password_file: b`),
    );
    expect(passwords.join('\n')).toMatch(/state\.redis\.password_file.*not both/);
    expect(problems(write('    sentinel: { master: m, nodes: ["sentinel-0"] }')).join('\n')).toMatch(
      /state\.redis\.sentinel\.nodes.*host:port/,
    );
  });

  it('takes cluster with its seed nodes; refuses it beside url or sentinel, with the file and line', () => {
    const path = write(`    cluster: { nodes: ["redis-0.redis:6379", "10.0.0.7:6380"] }
    password: s3cret`);
    const redis = loadConfig(path, { env: {} }).state.redis;
    expect(redis?.target).toEqual({
      kind: 'cluster',
      nodes: [
        { host: 'redis-0.redis', port: 6379 },
        { host: '10.0.0.7', port: 6380 },
      ],
      tls: false,
    });
    const withUrl = problems(
      write(`    url: redis://127.0.0.1:6379
    cluster: { nodes: ["redis-0:6379"] }`),
    ).join('\n');
    expect(withUrl).toMatch(/gateway\.yaml:\d+.*state\.redis.*exactly one of url/);
    const withSentinel = problems(
      write(`    sentinel: { master: m, nodes: ["s:26379"] }
    cluster: { nodes: ["redis-0:6379"] }`),
    ).join('\n');
    expect(withSentinel).toMatch(/state\.redis.*exactly one of/);
    expect(problems(write('    cluster: { nodes: [] }')).join('\n')).toMatch(/state\.redis\.cluster\.nodes/);
    expect(problems(write('    cluster: { nodes: ["redis-0"] }')).join('\n')).toMatch(
      /state\.redis\.cluster\.nodes.*host:port/,
    );
  });

  it('names a password_file it cannot read', () => {
    const out = problems(write(`    url: redis://127.0.0.1:6379\n    password_file: missing`));
    expect(out.join('\n')).toMatch(/state\.redis\.password_file.*cannot read/);
  });
});
