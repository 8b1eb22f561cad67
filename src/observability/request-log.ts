import type { Logger } from 'pino';
import { sinkOf } from './log.js';

/**
 * What one request's log line says. Never a header value, never the query. A client error the
 * parser raised has no method, path or duration: nothing of the request was parsed.
 */
export interface RequestLine {
  readonly requestId: string;
  readonly method: string | undefined;
  readonly path: string | undefined;
  readonly status: number;
  readonly keyName: string | undefined;
  readonly code: string;
  readonly durationMs: number | undefined;
  readonly upstreamMs: number | undefined;
}

export type RequestLog = (line: RequestLine) => void;

/**
 * The per-request line, written as pino would write it (same fields, same order, same escaping:
 * test/observability/request-log.test.ts compares the two) but without its generic machinery:
 * no child bindings, no redaction walk over fields that hold no credential, no serialiser lookup.
 * Lines go to the logger's sink in batches. Status ≥ 500 is `error`, the rest `info`, each
 * written only when the logger's level lets it through.
 */
export function createRequestLog(logger: Logger): RequestLog {
  const sink = sinkOf(logger);
  return (line) => {
    const level = line.status >= 500 ? 'error' : 'info';
    if (!logger.isLevelEnabled(level)) return;
    sink.batch(formatRequestLine(level, line, Date.now()));
  };
}

/** `nowMs` as ISO 8601, made once per millisecond: under load many lines share one. */
let isoMs = Number.NaN;
let isoText = '';
function isoTime(nowMs: number): string {
  if (nowMs !== isoMs) {
    isoMs = nowMs;
    isoText = new Date(nowMs).toISOString();
  }
  return isoText;
}

/**
 * `text` as a JSON string, as JSON.stringify writes it. Text with nothing to escape (the usual
 * request id, method, path, key name and code) is quoted as it is, without the general call.
 */
function str(text: string): string {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x20 || c === 0x22 || c === 0x5c || c > 0x7e) return JSON.stringify(text);
  }
  return `"${text}"`;
}

export function formatRequestLine(level: 'info' | 'error', line: RequestLine, nowMs: number): string {
  let text = `{"level":"${level}","time":"${isoTime(nowMs)}","service":"leadgate","request_id":${str(line.requestId)}`;
  if (line.method !== undefined) text += `,"method":${str(line.method)}`;
  if (line.path !== undefined) text += `,"path":${str(line.path)}`;
  text += `,"status":${line.status}`;
  if (line.keyName !== undefined) text += `,"key_name":${str(line.keyName)}`;
  text += `,"code":${str(line.code)}`;
  if (line.durationMs !== undefined) text += `,"duration_ms":${line.durationMs}`;
  if (line.upstreamMs !== undefined) text += `,"upstream_ms":${line.upstreamMs}`;
  return `${text},"msg":"request"}\n`;
}
