import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { isSupportedNode, nodeLineWarning, SUPPORTED_NODE } from '../../src/cli/node-line.js';
import { ask } from '../helpers/client.js';
import { ROOT } from '../helpers/example.js';
import { writeConfig } from '../helpers/fixture.js';
import { freePort } from '../helpers/optional.js';
import { runCli, serve } from '../helpers/process.js';
import { type RecordingUpstream, startRecordingUpstream } from '../helpers/upstream.js';

let upstream: RecordingUpstream;
beforeAll(async () => {
  upstream = await startRecordingUpstream();
});
afterAll(async () => {
  await upstream.close();
});

// every test runs the compiled binary a few times: on a busy machine that takes its while
vi.setConfig({ testTimeout: 90_000 });

describe('ports from the environment (LEADGATE_*_PORT, LEADGATE_UPSTREAM_URL)', () => {
  it('serve listens where the variables say, over the file', async () => {
    const [api, admin] = [await freePort(), await freePort()];
    const served = await serve(writeConfig({ upstream: 'http://127.0.0.1:1' }), {
      LEADGATE_LISTEN_PORT: String(api),
      LEADGATE_ADMIN_PORT: String(admin),
      LEADGATE_UPSTREAM_URL: upstream.url,
    });
    try {
      expect([served.apiPort, served.adminPort]).toEqual([api, admin]);
      const r = await ask(api, { path: '/api/v2/merchant/leads/x', headers: { 'x-source': 'web' } });
      expect(r.json().code).toBe('missing_api_key');
      expect((await ask(admin, { path: '/healthz' })).status).toBe(200);
    } finally {
      await served.stop();
    }
  });

  it('check applies the same variables and names them; a value that is not a port is a problem', () => {
    const path = writeConfig({ upstream: upstream.url });
    const ok = runCli(['check', '--config', path], { env: { LEADGATE_ADMIN_PORT: '9191' } });
    expect(ok.code).toBe(0);
    expect(ok.stdout).toMatch(/admin [\d.]+:9191, .*\(from the environment: LEADGATE_ADMIN_PORT=9191\)/);
    for (const value of ['80a', '65536']) {
      const bad = runCli(['check', '--config', path], { env: { LEADGATE_LISTEN_PORT: value } });
      expect(bad.code).toBe(1);
      expect(bad.stderr).toMatch(/listen\.port: LEADGATE_LISTEN_PORT /);
    }
    const noListener = runCli(['check', '--config', path], { env: { LEADGATE_FORWARD_AUTH_PORT: '8181' } });
    expect(noListener.code).toBe(1);
    expect(noListener.stderr).toMatch(/forward_auth: LEADGATE_FORWARD_AUTH_PORT /);
  });
});

describe('the first commands a newcomer types', () => {
  it('an unset variable names the .env.example beside the config that sets it', () => {
    const r = runCli(['check', '--config', join(ROOT, 'config/gateway.yaml')]);
    expect(r.code).toBe(1);
    const unset = r.stderr.split('\n').filter((l) => l.includes('is not set'));
    expect(unset).toHaveLength(6);
    for (const line of unset) expect(line).toContain('config/.env.example');
  });

  it('serve and check with the config as a bare word: exit 2 and the exact command to type', () => {
    const serveIt = spawnSync(process.execPath, ['dist/src/main.js', 'serve', 'config/gateway.yaml'], {
      cwd: ROOT,
      encoding: 'utf8',
    });
    expect(serveIt.status).toBe(2);
    expect(serveIt.stderr).toContain('leadgate serve --config config/gateway.yaml');
    // a word that is not a file (a pasted key, say) is never repeated
    const checkIt = runCli(['check', 'sk_live_pasted_by_mistake']);
    expect(checkIt.code).toBe(2);
    expect(checkIt.stderr).toContain('leadgate check --config PATH');
    expect(checkIt.stderr).not.toContain('sk_live_pasted_by_mistake');
  });

  it('check says when the leads come from the default leads.yaml beside the config, and when there are none', () => {
    const path = writeConfig({ upstream: upstream.url });
    expect(readFileSync(path, 'utf8')).not.toMatch(/^leads:/m);
    const found = runCli(['check', '--config', path]);
    expect(found.code).toBe(0);
    expect(found.stdout).toContain('no leads section, so leads.yaml beside the config (the default)');
    rmSync(join(dirname(path), 'leads.yaml'));
    const none = runCli(['check', '--config', path]);
    expect(none.stdout).toContain('no leads: no leads section, and no leads.yaml beside the config');
    writeFileSync(path, `${readFileSync(path, 'utf8')}\nleads: { file: leads.yaml }\n`);
    expect(runCli(['check', '--config', path]).code).toBe(1);
  });
});

describe('Node lines', () => {
  it('engines and the run-time check agree', () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { engines: { node: string } };
    expect(pkg.engines.node).toBe(SUPPORTED_NODE);
    expect(['20.20.2', '22.18.0', '18.0.0'].map(isSupportedNode)).toEqual([false, false, false]);
    expect(['22.19.0', '24.1.0', '26.10.0'].map(isSupportedNode)).toEqual([true, true, true]);
    expect(nodeLineWarning('26.10.0')).toBeNull();
  });

  // a real Node 20, pinned like the supported lines (fetched once into .cache/)
  const node20 = () =>
    execFileSync('bash', ['scripts/node-line.sh', '20'], {
      cwd: ROOT,
      encoding: 'utf8',
      timeout: 120_000,
    }).trim();
  it('on a real Node 20: one warning line on stderr, from --version and at start', () => {
    const bin = node20();
    const version = spawnSync(bin, ['bin/leadgate.js', '--version'], { cwd: ROOT, encoding: 'utf8' });
    expect(version.status).toBe(0);
    expect(version.stdout).toMatch(/^leadgate \d+\.\d+\.\d+\n$/);
    expect(version.stderr.trim().split('\n')).toHaveLength(1);
    expect(version.stderr).toMatch(/Node 20\.\d+\.\d+ is not supported .*>=22\.19/);
    const check = spawnSync(bin, ['bin/leadgate.js', 'check', '--config', 'missing.yaml'], {
      cwd: ROOT,
      encoding: 'utf8',
    });
    expect(check.stderr.split('\n')[0]).toMatch(/Node 20\.\d+\.\d+ is not supported/);
    // and none on this (supported) line
    const here = spawnSync(process.execPath, ['bin/leadgate.js', '--version'], {
      cwd: ROOT,
      encoding: 'utf8',
    });
    expect(here.stderr).toBe('');
  }, 150_000);
});
