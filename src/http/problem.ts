import type { ServerResponse } from 'node:http';
import type { GatewayError } from '../contract/errors.js';
import { failAnswer } from './forward.js';

/**
 * Writes an RFC 9457 problem for a refusal. The body holds the catalogue's fixed words and the
 * error's fixed detail only; nothing taken from the request is echoed.
 */
export function writeProblem(
  res: ServerResponse,
  error: GatewayError,
  requestId: string,
  headers: Readonly<Record<string, string>> = {},
  carried = false,
): void {
  if (res.headersSent) {
    failAnswer(res); // an answer under way is cut, never ended as if whole
    return;
  }
  const body = problemBody(error, requestId);
  const head = {
    ...headers,
    'content-type': 'application/problem+json',
    'cache-control': 'no-store',
    'x-request-id': requestId,
  };
  if (carried) {
    res.writeHead(403, { ...head, ...carriedRefusal(error.status, body), 'content-length': 0 });
    res.end();
    return;
  }
  res.writeHead(error.status, { ...head, 'content-length': Buffer.byteLength(body) });
  res.end(res.req?.method === 'HEAD' ? undefined : body);
}

/**
 * A refusal for nginx's `auth_request`, which turns every answer but 2xx, 401 and 403 into its
 * own 500: the call is answered 403 and the real status and body travel in two headers, for the
 * shipped file's `error_page` location to send as they are (one call, one charge). The body is
 * the same JSON with every character outside printable ASCII escaped, so it fits a header.
 */
export function carriedRefusal(status: number, body: string): Record<string, string> {
  return {
    'x-leadgate-status': String(status),
    'x-leadgate-problem': body.replace(
      /[^\x20-\x7e]/g,
      (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
    ),
  };
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

/**
 * A problem as the answer of a response that may be gone (an h2 stream reset under it): written
 * when nothing was sent and the stream is open, else the response is cut. Never throws.
 */
export function answerOrCut(res: ServerResponse, error: GatewayError, requestId = 'none'): void {
  try {
    if (res.destroyed === true || res.writableEnded) {
      res.destroy();
      return;
    }
    if (res.headersSent) {
      failAnswer(res);
      return;
    }
    writeProblem(res, error, requestId);
  } catch {
    try {
      res.destroy();
    } catch {
      // the stream is gone already
    }
  }
}
