import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { GatewayError } from '../contract/errors.js';
import type { Generation } from '../generation.js';
import type { Metrics } from '../observability/metrics.js';
import type { RequestLog } from '../observability/request-log.js';
import type { RequestTrace } from '../tracing/index.js';
import { answeredWhole } from './forward.js';
import { keyOf, type Phase } from './phase.js';
import { routeTemplate } from './route.js';

/** The `kind` of `leadgate_request_duration_seconds`: what the request turned out to be. */
export type Kind = 'forward' | 'lookup' | 'preflight' | 'auth' | 'refused';

/** What a request closed without an answer of its own counts as: its listener says (entry.ts). */
export type UnansweredKind = 'auth' | 'refused';

export interface CloseOutDeps {
  readonly metrics: Metrics;
  readonly requestLog: RequestLog;
  /** `leadgate_inflight_requests`: up when a request is received, down here. */
  readonly inflight: { count: number };
}

/** What the close-out reads of a request (the exchange, exchange.ts). */
export interface Closing {
  readonly requestId: string;
  readonly started: bigint;
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  /** 'ok', or the code of the refusal the request was answered with. */
  readonly code: string;
  /** The refusal that cut an answer already under way (exchange.ts), else null. */
  readonly cutFor: GatewayError | null;
  readonly trace: RequestTrace | null;
  readonly generation: Generation;
  readonly unanswered: UnansweredKind;
}

/**
 * A request's response closed, answered or not: it is counted (`leadgate_requests_total`, the
 * duration by kind), its log line written when the config logs it, and its spans ended. `last` is
 * the phase it closed in (phase.ts). Reads only; the request itself is not changed.
 */
export function closeOut(ex: Closing, last: Phase, deps: CloseOutDeps): void {
  const { res, req } = ex;
  deps.inflight.count--;
  const seconds = Number(process.hrtime.bigint() - ex.started) / 1e9;
  // An h2 stream reset by its client reports writableFinished too: answeredWhole tells them apart.
  const whole = answeredWhole(res);
  // Not whole: cut for a refusal (the upstream failed mid-answer: its status), else the client left.
  const status = whole ? res.statusCode : (ex.cutFor?.status ?? 499);
  const code = !whole && ex.code === 'ok' ? 'client_closed' : ex.code;
  const kind = kindOf(last, ex.code, ex.unanswered);
  const keyName = keyOf(last)?.name;
  const upstreamSeconds = last.step === 'forwarding' || last.step === 'lookup' ? last.upstreamSeconds : null;
  deps.metrics.requests.add(status, code, keyName ?? '');
  deps.metrics.requestDuration.observe(kind, seconds);
  if (ex.trace !== null) {
    // The upstream answered (its status is the client's) or the call failed.
    if (last.step === 'forwarding') last.call?.end(upstreamSeconds === null ? undefined : status);
    ex.trace.end({ status, route: routeTemplate(kind === 'lookup', req.url), code, keyName });
  }
  const logged = ex.generation.config.log.requests;
  if (logged === 'none' || (logged === 'errors' && status < 400)) return;
  const url = req.url ?? '';
  const q = url.indexOf('?');
  deps.requestLog({
    requestId: ex.requestId,
    method: req.method,
    path: q === -1 ? url : url.slice(0, q),
    status,
    keyName,
    code,
    durationMs: Math.round(seconds * 1e6) / 1e3,
    upstreamMs: upstreamSeconds === null ? undefined : Math.round(upstreamSeconds * 1e6) / 1e3,
  });
}

/**
 * A client error the connection guard answers itself (connection.ts), with no request to close
 * out: Node's parser gave up on the bytes (400, 408, 431), or a CONNECT was refused. Counted
 * (`leadgate_requests_total`, no key) and logged as every refusal is, with the method when one
 * was parsed (CONNECT) and no path or duration. Returns the request id its answer carries.
 */
export function closeOutClientError(
  error: GatewayError,
  method: string | undefined,
  generation: Generation,
  deps: Pick<CloseOutDeps, 'metrics' | 'requestLog'>,
): string {
  const requestId = randomUUID();
  deps.metrics.requests.add(error.status, error.code, '');
  // a refusal (status 400 and up): logged unless the config logs nothing
  if (generation.config.log.requests !== 'none') {
    deps.requestLog({
      requestId,
      method,
      path: undefined,
      status: error.status,
      keyName: undefined,
      code: error.code,
      durationMs: undefined,
      upstreamMs: undefined,
    });
  }
  return requestId;
}

/**
 * A refused request (any refusal, in any phase) is 'refused'; else what its last phase says, and
 * one that closed before its listener answered it (its client left) counts as its listener says.
 */
function kindOf(last: Phase, code: string, unanswered: UnansweredKind): Kind {
  if (code !== 'ok') return 'refused';
  switch (last.step) {
    case 'forwarding':
      return 'forward';
    case 'lookup':
      return 'lookup';
    case 'answered':
      return last.kind;
    default:
      return unanswered;
  }
}
