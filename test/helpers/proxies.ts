import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ask } from './client.js';
import { freePort, runs } from './optional.js';

/** Where the shipped proxy files send their calls: leadgate's two listeners and the backend. */
export interface Targets {
  readonly auth: number;
  readonly api: number;
  /** host:port of the backend */
  readonly app: string;
}

export interface RunningProxy {
  readonly port: number;
  stop(): void;
}

/** Polls until something answers HTTP on `port` (up to 5 s). */
export async function waitForListener(port: number): Promise<void> {
  for (let i = 0; i < 100; i++) {
    const up = await ask(port, { path: '/healthz-probe' }).then(
      () => true,
      () => false,
    );
    if (up) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`nothing answered on port ${port}`);
}

export const NGINX = '/usr/sbin/nginx';
export const hasNginx = runs(NGINX, ['-v']);
export const NGINX_SNIPPET = new URL('../../deploy/nginx/leadgate-auth.conf', import.meta.url).pathname;

/** A real nginx whose server { } includes the shipped snippet as its header says. */
export async function startNginx(t: Targets, snippet = NGINX_SNIPPET): Promise<RunningProxy> {
  const dir = mkdtempSync(join(tmpdir(), 'leadgate-nginx-'));
  const temps = ['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'];
  for (const name of temps) mkdirSync(join(dir, name));
  const port = await freePort();
  writeFileSync(
    join(dir, 'nginx.conf'),
    `worker_processes 1; daemon off; pid ${dir}/nginx.pid; error_log ${dir}/error.log warn;
events { worker_connections 64; }
http {
  access_log off; ${temps.map((n) => `${n}_temp_path ${dir}/${n};`).join(' ')}
  upstream leadgate_auth { server 127.0.0.1:${t.auth}; }
  upstream leadgate_api { server 127.0.0.1:${t.api}; }
  upstream app { server ${t.app}; }
  server {
    listen 127.0.0.1:${port};
    include ${snippet};
  }
}
`,
  );
  const nginx = spawn(NGINX, ['-p', dir, '-c', join(dir, 'nginx.conf')], { stdio: 'ignore' });
  await waitForListener(port);
  return { port, stop: () => stop(nginx, 'SIGQUIT') };
}

export const CADDY = '/usr/bin/caddy';
export const hasCaddy = runs(CADDY, ['version']);
export const CADDY_SNIPPET = new URL('../../deploy/caddy/leadgate.caddy', import.meta.url).pathname;

/** A real Caddy whose site block imports the shipped file, addresses from the environment. */
export async function startCaddy(t: Targets): Promise<RunningProxy> {
  const dir = mkdtempSync(join(tmpdir(), 'leadgate-caddy-'));
  const port = await freePort();
  writeFileSync(
    join(dir, 'Caddyfile'),
    `{\n\tadmin off\n\tauto_https off\n}\nhttp://127.0.0.1:${port} {\n\timport ${CADDY_SNIPPET}\n}\n`,
  );
  const caddy = spawn(CADDY, ['run', '--adapter', 'caddyfile', '--config', join(dir, 'Caddyfile')], {
    stdio: 'ignore',
    env: {
      PATH: process.env.PATH,
      HOME: dir,
      XDG_DATA_HOME: dir,
      XDG_CONFIG_HOME: dir,
      LEADGATE_AUTH: `127.0.0.1:${t.auth}`,
      LEADGATE_API: `127.0.0.1:${t.api}`,
      APP_UPSTREAM: t.app,
    },
  });
  await waitForListener(port);
  return { port, stop: () => stop(caddy, 'SIGTERM') };
}

function stop(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.exitCode === null) child.kill(signal);
}
