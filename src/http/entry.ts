import type { IncomingMessage, ServerResponse } from 'node:http';
import { RequestFacts } from '../auth/facts.js';
import type { Principal } from '../auth/pipeline.js';
import { GatewayError } from '../contract/errors.js';
import type { CorsHeaders } from '../cors/cors.js';
import type { Generation } from '../generation.js';
import type { Logger } from '../observability/log.js';
import type { Metrics } from '../observability/metrics.js';
import type { RequestLog } from '../observability/request-log.js';
import type { RequestTracer } from '../tracing/index.js';
import { admit } from './admit.js';
import type { BodyWatch } from './body.js';
import type { ConnectionGuard } from './connection.js';
import { closesConnection, type Lifecycle } from './drain.js';
import { Exchange, type ListenerTraits } from './exchange.js';
import type { Forwarder } from './forward.js';
import { ENTERED, type Entered, type Judged } from './phase.js';
import { checkWire } from './protocol.js';

/** What a listener's handler is built from (gateway.ts). */
export interface HandlerDeps {
  readonly current: () => Generation;
  readonly forwarder: Forwarder;
  readonly metrics: Metrics;
  readonly logger: Logger;
  readonly requestLog: RequestLog;
  readonly guard: ConnectionGuard;
  /** The request bodies in progress, checked against the minimum data rate. */
  readonly bodies: BodyWatch;
  readonly lifecycle: Lifecycle;
  readonly inflight: { count: number };
  readonly tracer: RequestTracer | null;
  readonly now?: () => number;
}

/** The request a listener asks §3 to judge: its own (`ITSELF`) or the one it names. */
export interface JudgedRequest {
  readonly method: string;
  readonly url: string;
}

/** The request judged is the one received (the API listener). No object per request. */
export const ITSELF: unique symbol = Symbol('leadgate.itself');

/**
 * What one listener adds to the entry step. The entry runs, in this order, for every request:
 * the drain's `Connection: close`, the shutting-down refusal, the wire rules (RFC 9112), then
 * `judges`, §3, the CORS origin check, `refuses`, admission, and `admitted`. Each step is given
 * the phase it runs in (phase.ts), from which it may move the exchange on.
 */
export interface ListenerPart extends ListenerTraits {
  /**
   * Which request §3 judges, a refusal, or null when the listener has answered it itself (a
   * CORS preflight).
   */
  judges(ex: Exchange, entered: Entered): JudgedRequest | typeof ITSELF | GatewayError | null;
  /** After §3 and the origin check, before admission: this listener's own refusal, or null. */
  refuses(ex: Exchange, principal: Principal): GatewayError | null;
  /** Admitted: answer. `cors` is the grant, `added` the admission's headers (RateLimit fields). */
  admitted(
    ex: Exchange,
    judged: Judged,
    principal: Principal,
    cors: CorsHeaders,
    added: Readonly<Record<string, string>>,
  ): void;
}

/**
 * The one way into either listener (API, forward-auth): what every request goes through before
 * its listener's own part. It decides nothing itself. No throw leaves it: an unexpected one is
 * that request's 500.
 */
export function createEntry(deps: HandlerDeps, part: ListenerPart) {
  const nowS = deps.now ?? (() => Math.floor(Date.now() / 1000));

  const start = (req: IncomingMessage, res: ServerResponse): Exchange => {
    const ex = new Exchange(deps, req, res, deps.current(), part);
    try {
      enter(ex, ENTERED);
    } catch (err) {
      ex.unexpected(err);
    }
    return ex;
  };

  return function handle(req: IncomingMessage, res: ServerResponse): void {
    deps.guard.begin(req, res, start);
  };

  function enter(ex: Exchange, entered: Entered): void {
    const { req, res, generation } = ex;
    // Closing during the drain (see drain.ts), or an Upgrade (Node stops parsing after one): last
    // answer. A client's own `Connection: close` Node honours itself.
    if (closesConnection(deps.lifecycle)) res.setHeader('connection', 'close');
    if (req.headers.upgrade !== undefined) ex.closeAfter();
    if (deps.lifecycle.stopped) {
      ex.refuse(new GatewayError('shutting_down', 'the gateway is shutting down'));
      return;
    }
    const wireError = checkWire(req, generation.config.limits.maxHeaderCount);
    if (wireError !== null) {
      ex.closeAfter();
      ex.refuse(wireError);
      return;
    }
    const target = part.judges(ex, entered);
    if (target === null) return;
    if (target instanceof GatewayError) {
      ex.refuse(target);
      return;
    }
    const own = target === ITSELF;
    const facts = new RequestFacts(
      own ? (req.method ?? 'GET') : target.method,
      own ? (req.url ?? '/') : target.url,
      req.headers,
      req.socket.remoteAddress,
      nowS(),
      generation.config.trustedProxies,
    );
    const result = generation.authenticate(facts);
    const judged = ex.judge(entered, facts, result.key);
    if (result.error !== null) {
      ex.refuse(result.error);
      return;
    }
    const principal = result.principal;
    const origin = req.headers.origin;
    if (!generation.cors.allows(origin, principal.key)) {
      ex.refuse(new GatewayError('cors_origin_not_allowed', 'this API key may not be used from this origin'));
      return;
    }
    const refusal = part.refuses(ex, principal);
    if (refusal !== null) {
      ex.refuse(refusal);
      return;
    }
    const cors = generation.cors.grant(origin, principal.key);
    admit(ex, judged, principal, cors, (added) => part.admitted(ex, judged, principal, cors, added));
  }
}
