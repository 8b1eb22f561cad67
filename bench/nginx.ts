import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../test/helpers/optional.js';
import { hasNginx, NGINX, waitForListener } from '../test/helpers/proxies.js';
import { pinned } from './pin.js';
import { children, gentle } from './process.js';

/**
 * nginx with one worker on the measured core, proxying to the bench upstream over kept-alive
 * connections. Null, said on stderr, when nginx is not installed.
 */
export async function startNginx(upstreamPort: number): Promise<{ port: number; pid: number } | null> {
  if (!hasNginx) {
    process.stderr.write('  nginx not installed: its row is left out (Debian: nginx-light)\n');
    return null;
  }
  const dir = mkdtempSync(join(tmpdir(), 'leadgate-nginx-'));
  const port = await freePort();
  writeFileSync(
    join(dir, 'nginx.conf'),
    `worker_processes 1; daemon off; pid ${dir}/nginx.pid; error_log ${dir}/error.log warn;
events { worker_connections 4096; }
http {
  access_log ${dir}/access.log;
  upstream up { server 127.0.0.1:${upstreamPort}; keepalive 64; }
  server { listen 127.0.0.1:${port}; location / {
    proxy_pass http://up; proxy_http_version 1.1; proxy_set_header Connection ""; } }
}
`,
  );
  const [command, args] = pinned('measured', NGINX, ['-p', dir, '-c', join(dir, 'nginx.conf')]);
  const child = spawn(command, args, { stdio: 'ignore' });
  children.push(child);
  gentle.add(child);
  await waitForListener(port);
  return { port, pid: child.pid ?? 0 };
}
