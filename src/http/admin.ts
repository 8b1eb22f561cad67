import type { IncomingMessage, ServerResponse } from 'node:http';

/** Where /metrics comes from: a prom-client registry, or a worker pool's aggregate. */
export interface MetricsSource {
  readonly contentType: string;
  metrics(): Promise<string>;
}

export interface Readiness {
  /** Null when ready, else why not (a short fixed phrase). */
  notReadyBecause(): string | null;
}

/** The admin listener: /healthz, /readyz, /metrics. Never proxied, never authenticated. */
export function createAdminHandler(metrics: MetricsSource, readiness: Readiness) {
  const json = (res: ServerResponse, status: number, body: object) => {
    const text = JSON.stringify(body);
    res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' });
    res.end(text);
  };
  return function handleAdmin(req: IncomingMessage, res: ServerResponse): void {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      json(res, 405, { status: 'method not allowed' });
      return;
    }
    switch (path) {
      case '/healthz':
        json(res, 200, { status: 'ok' });
        return;
      case '/readyz': {
        const why = readiness.notReadyBecause();
        json(
          res,
          why === null ? 200 : 503,
          why === null ? { status: 'ready' } : { status: 'not ready', reason: why },
        );
        return;
      }
      case '/metrics':
        metrics.metrics().then(
          (text) => {
            res.writeHead(200, { 'content-type': metrics.contentType });
            res.end(text);
          },
          () => json(res, 500, { status: 'metrics unavailable' }),
        );
        return;
      default:
        json(res, 404, { status: 'not found' });
        return;
    }
  };
}
