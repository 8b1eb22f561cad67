import type { ServerResponse } from 'node:http';
import type { GatewayError } from '../contract/errors.js';

/**
 * Writes an RFC 9457 problem for a refusal. The body holds the catalogue's fixed words and the
 * error's fixed detail only; nothing taken from the request is echoed.
 */
export function writeProblem(
  res: ServerResponse,
  error: GatewayError,
  requestId: string,
  headers: Readonly<Record<string, string>> = {},
): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const body = problemBody(error, requestId);
  res.writeHead(error.status, {
    ...headers,
    'content-type': 'application/problem+json',
    'content-length': Buffer.byteLength(body),
    'cache-control': 'no-store',
    'x-request-id': requestId,
  });
  res.end(res.req?.method === 'HEAD' ? undefined : body);
}

export function problemBody(error: GatewayError, requestId: string): string {
  return JSON.stringify({
    type: 'about:blank',
    title: error.title,
    status: error.status,
    code: error.code,
    detail: error.detail,
    request_id: requestId,
  });
}
