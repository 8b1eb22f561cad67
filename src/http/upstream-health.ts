import http, { type Agent } from 'node:http';
import https from 'node:https';

export interface UpstreamHealth {
  healthy(): boolean;
  stop(): void;
}

/** Called when the probe's verdict changes (the first answer included), with the reason in words. */
export type HealthChange = (healthy: boolean, reason: string) => void;

/**
 * Optional readiness input (`upstream.health_path`): the upstream's health path is asked every
 * `intervalMs`; a 2xx or 3xx answer within the timeout is healthy. Unhealthy until the first
 * answer. Each change of verdict is reported once to `onChange`, with what the probe saw
 * (`GET /healthz → 404`, a timeout, a refused connection), so a log can say why `/readyz` moved.
 */
export function createUpstreamHealth(
  base: URL,
  path: string,
  agent: Agent,
  onChange: HealthChange = () => {},
  intervalMs = 2000,
  timeoutMs = 1000,
): UpstreamHealth {
  let ok = false;
  let verdict: boolean | null = null;
  let stopped = false;
  const client = base.protocol === 'https:' ? https : http;
  const settle = (healthy: boolean, saw: string) => {
    ok = healthy;
    if (stopped || verdict === healthy) return;
    verdict = healthy;
    onChange(healthy, `upstream health check ${healthy ? 'passed' : 'failed'} (GET ${path} → ${saw})`);
  };
  const probe = () => {
    const req = client.request(new URL(path, base), { method: 'GET', agent, timeout: timeoutMs }, (res) => {
      const status = res.statusCode ?? 0;
      settle(status >= 200 && status < 400, String(status));
      res.resume();
    });
    req.on('timeout', () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    req.on('error', (err: NodeJS.ErrnoException) => settle(false, err.code ?? err.message));
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
