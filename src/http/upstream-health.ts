import http, { type Agent } from 'node:http';
import https from 'node:https';

export interface UpstreamHealth {
  healthy(): boolean;
  stop(): void;
}

/**
 * Optional readiness input (`upstream.health_path`): the upstream's health path is asked every
 * `intervalMs`; a 2xx or 3xx answer within the timeout is healthy. Unhealthy until the first answer.
 */
export function createUpstreamHealth(
  base: URL,
  path: string,
  agent: Agent,
  intervalMs = 2000,
  timeoutMs = 1000,
): UpstreamHealth {
  let ok = false;
  let stopped = false;
  const client = base.protocol === 'https:' ? https : http;
  const probe = () => {
    const req = client.request(new URL(path, base), { method: 'GET', agent, timeout: timeoutMs }, (res) => {
      ok = res.statusCode !== undefined && res.statusCode >= 200 && res.statusCode < 400;
      res.resume();
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => {
      ok = false;
    });
    req.end();
  };
  probe();
  const timer = setInterval(() => {
    if (!stopped) probe();
  }, intervalMs);
  timer.unref();
  return {
    healthy: () => ok,
    stop() {
      stopped = true;
      clearInterval(timer);
    },
  };
}
