import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config/load.js';
import { runCli } from '../helpers/process.js';

const read = (file: string) => readFileSync(new URL(`../../${file}`, import.meta.url), 'utf8');
const dockerfile = read('Dockerfile');
const ignored = read('.dockerignore')
  .split('\n')
  .map((l) => l.trim())
  .filter((l) => l !== '' && !l.startsWith('#'));
const DEFAULT_CONFIG = new URL('../../config/container.yaml', import.meta.url).pathname;
const ENV = {
  LEADGATE_UPSTREAM_URL: 'http://backend:3000',
  LEADGATE_API_KEY_SHA256: 'a'.repeat(64),
  LEADGATE_SIGNING_SECRET: 'c2VjcmV0LXNpZ25pbmcta2V5LW9mLTMyLWJ5dGVzIQ',
};

describe('the container as shipped', () => {
  it('copies nothing that .dockerignore filters out, so the build works from the repository root', () => {
    const sources = [...dockerfile.matchAll(/^COPY (?!--from)(.+)$/gm)].flatMap((m) =>
      (m[1] ?? '').trim().split(/\s+/).slice(0, -1),
    );
    expect(sources.length).toBeGreaterThan(3);
    for (const source of sources)
      for (const pattern of ignored)
        expect(source === pattern || source.startsWith(`${pattern}/`), `${source} vs ${pattern}`).toBe(false);
  });

  it('bakes in config/container.yaml: both listeners on 0.0.0.0, keys and secrets from the environment', () => {
    expect(dockerfile).toMatch(/^COPY config\/container\.yaml \/etc\/leadgate\/gateway\.yaml$/m);
    const config = loadConfig(DEFAULT_CONFIG, { env: ENV });
    expect(config.listen).toMatchObject({ host: '0.0.0.0', port: 8080 });
    expect(config.admin).toMatchObject({ host: '0.0.0.0', port: 9090 });
    expect(config.upstream.url.href).toBe('http://backend:3000/');
    expect(config.keys.size).toBe(1);
  });

  it('names every variable it needs when they are not set', () => {
    expect(() => loadConfig(DEFAULT_CONFIG, { env: {} })).toThrow(ConfigError);
    const r = runCli(['check', '--config', DEFAULT_CONFIG]);
    expect(r.code).toBe(1);
    for (const name of Object.keys(ENV)) expect(r.stderr).toContain(name);
  });

  it('docs/getting-started.md shows a copy-paste docker run, with the environment and with a mounted config', () => {
    const readme = read('docs/getting-started.md');
    expect(readme).toMatch(/docker run [^\n]*-p 8080:8080/);
    for (const name of Object.keys(ENV)) expect(readme).toContain(name);
    expect(readme).toMatch(/-v [^\n]*:\/etc\/leadgate/);
    expect(readme).toMatch(/0\.0\.0\.0/);
  });
});
