import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { RequestFacts } from '../auth/facts.js';
import type { Principal } from '../auth/pipeline.js';
import type { ApiKey } from '../config/types.js';
import { GatewayError } from '../contract/errors.js';
import type { CorsHeaders } from '../cors/cors.js';
import type { Generation } from '../generation.js';
import type { Logger } from '../observability/log.js';
import type { CallSpan, RequestTrace, RequestTracer } from '../tracing/index.js';
import { type CloseOutDeps, type Closing, closeOut, type UnansweredKind } from './close-out.js';
import type { ConnectionGuard, Failable } from './connection.js';
import { failAnswer, gone } from './forward.js';
import {
  type Answered,
  CLOSED,
  ENTERED,
  type Entered,
  type Forwarding,
  type Judged,
  keyOf,
  type LookingUp,
  type Phase,
} from './phase.js';
import { writeProblem } from './problem.js';
import { announcesBody } from './protocol.js';

export interface ExchangeDeps extends CloseOutDeps {
  readonly logger: Logger;
  readonly guard: ConnectionGuard;
  /** Null when tracing is off. */
  readonly tracer: RequestTracer | null;
}

/** What an exchange takes of the listener it came in on (entry.ts's `ListenerPart` is one). */
export interface ListenerTraits {
  /** What a request of this listener counts as when it closes before an answer of its own. */
  readonly unanswered: UnansweredKind;
  /** A refusal is answered 403 with the real one in headers (nginx's auth_request; problem.ts). */
  carriesRefusal(req: IncomingMessage): boolean;
}

/**
 * One request and its answer: its phase (phase.ts), each move between phases made here, and the
 * one place that answers with a problem. When its response closes it is closed out (close-out.ts).
 */
export class Exchange implements Failable, Closing {
  readonly requestId = randomUUID();
  readonly started = process.hrtime.bigint();
  /** 'ok', or the code of the refusal it was answered with (the last one). */
  code = 'ok';
  /** The refusal that cut an answer already under way (the upstream failed mid-answer), else null. */
  cutFor: GatewayError | null = null;
  /** This request's spans when it is sampled, else null. */
  readonly trace: RequestTrace | null;
  readonly unanswered: UnansweredKind;
  readonly refusalCarried: boolean;
  /** Kept: Node detaches the socket from the request and response once answered. */
  readonly socket: Socket;
  /** Where the request is on its way (phase.ts); moved on only by the methods below. */
  private current: Phase = ENTERED;

  constructor(
    private readonly deps: ExchangeDeps,
    readonly req: IncomingMessage,
    readonly res: ServerResponse,
    readonly generation: Generation,
    listener: ListenerTraits,
  ) {
    this.socket = req.socket;
    this.unanswered = listener.unanswered;
    this.refusalCarried = listener.carriesRefusal(req);
    (res as Owned)[EXCHANGE] = this;
    res.on('close', onResponseClose);
    this.trace = deps.tracer === null ? null : deps.tracer.begin(req.method ?? 'GET', req.headers);
    deps.inflight.count++;
  }

  /** entered → judged: §3 has run on `facts` and found `key` (null when none), refused or not. */
  judge(_from: Entered, facts: RequestFacts, key: ApiKey | null): Judged {
    const judged: Judged = { step: 'judged', facts, key };
    this.current = judged;
    return judged;
  }

  /** judged → forwarding: admitted, on its way to the upstream; `call` its span when sampled. */
  forward(_from: Judged, principal: Principal, call: CallSpan | null): Forwarding {
    const forwarding: Forwarding = {
      step: 'forwarding',
      key: principal.key,
      call,
      handle: null,
      upstreamSeconds: null,
    };
    this.current = forwarding;
    return forwarding;
  }

  /** judged → lookup: admitted, the lead looked up here. */
  lookUp(_from: Judged, principal: Principal): LookingUp {
    const lookingUp: LookingUp = { step: 'lookup', key: principal.key, upstreamSeconds: null };
    this.current = lookingUp;
    return lookingUp;
  }

  /** entered → answered (a preflight) or judged → answered (forward-auth's 200): answered in place. */
  answeredInPlace(from: Entered | Judged, kind: Answered['kind']): void {
    this.current = { step: 'answered', kind, key: keyOf(from) };
  }

  /** True once an answer has started (or the connection is gone): nothing more may be written. */
  get answered(): boolean {
    return this.res.headersSent || this.res.destroyed;
  }

  /** Answers with a problem. A body the client still sends is not read: the connection ends. */
  refuse(
    error: GatewayError,
    cors: CorsHeaders = this.generation.cors.grant(this.req.headers.origin, keyOf(this.current)),
  ): void {
    this.code = error.code;
    if (this.answered) {
      // An answer under way (the upstream's headers passed on) is cut, so that no client takes
      // it for whole; a client already gone is not.
      if (!gone(this.res)) this.cutFor = error;
      failAnswer(this.res);
      return;
    }
    this.leaveBody();
    writeProblem(this.res, error, this.requestId, cors, this.refusalCarried);
  }

  /** Answered in place: a body the client is still sending is not read, the connection ends. */
  leaveBody(): void {
    if (announcesBody(this.req) && !this.req.complete) this.closeAfter();
  }

  /** This answer is the connection's last; the close is bounded (see connection.ts). */
  closeAfter(): void {
    this.deps.guard.closeAfter(this.res, this.socket);
  }

  /** The connection failed under this request (bad chunk, body too slow): end it with `error`. */
  fail(error: GatewayError): void {
    this.closeAfter();
    this.endWith(error);
  }

  /** A throw nobody expected: this request's 500, logged; the gateway serves on. */
  unexpected(err: unknown): void {
    this.deps.logger.error(
      { request_id: this.requestId, err: err instanceof Error ? err.name : 'unknown' },
      'unexpected error while serving a request',
    );
    this.endWith(internal);
  }

  /** Once the upstream has the request, its engine answers the error (or cuts the answer). */
  private endWith(error: GatewayError): void {
    const phase = this.current;
    if (phase.step === 'forwarding' && phase.handle !== null) phase.handle.fail(error);
    else this.refuse(error);
  }

  /**
   * any → closed: the response closed, answered or not; the one `close` listener of a request.
   * The forwarder stops an upstream request whose answer did not finish, the request is closed
   * out, then the connection guard may start the next pipelined request.
   */
  closed(): void {
    const last = this.current;
    this.current = CLOSED;
    if (last.step === 'forwarding') last.handle?.closed();
    closeOut(this, last, this.deps);
    this.deps.guard.ended(this.res, this.socket);
  }
}

const internal = new GatewayError('internal_error', 'the gateway failed to serve this request');

const EXCHANGE = Symbol('leadgate.exchange');
type Owned = ServerResponse & { [EXCHANGE]?: Exchange };

/** A `close` listener shared by every response (no closure per request). */
function onResponseClose(this: Owned): void {
  this[EXCHANGE]?.closed();
}
