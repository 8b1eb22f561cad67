import type { RequestFacts } from '../auth/facts.js';
import type { ApiKey } from '../config/types.js';
import type { CallSpan } from '../tracing/index.js';
import type { ForwardHandle } from './forward.js';

/**
 * Where a request is on its way through a listener, as Envoy's ext_authz filter keeps its
 * `NotStarted/Calling/Complete`: each phase carries what is known from then on, and nothing that
 * is not known yet. The way is one way:
 *
 *     entered ─▶ judged ─▶ forwarding | lookup | answered
 *        └──────────────────────────────────▶ answered (a preflight)
 *     any of them ─▶ closed
 *
 * Each move is one method of the exchange (exchange.ts); each move on the way takes the phase it
 * leaves, so a move from the wrong phase does not compile; closing ends any phase. A refusal is
 * not a phase: it is the request's outcome (its `code`), and may come in any phase; a request
 * refused while forwarding still has its upstream call to end when it closes.
 */
export type Phase = Entered | Judged | Forwarding | LookingUp | Answered | Closed;

/** Received; the listener's own checks run (drain, wire rules, which request is judged). */
export interface Entered {
  readonly step: 'entered';
}

/**
 * §3 has run on the request's facts (entry.ts). `key` is the key it found, null when none,
 * whether §3 let the request through or not: the metrics and the log line name it. CORS, the
 * listener's own refusal and admission (admit.ts, perhaps awaiting the state store) run here.
 */
export interface Judged {
  readonly step: 'judged';
  readonly facts: RequestFacts;
  readonly key: ApiKey | null;
}

/** Admitted and passed on to the upstream (server.ts). */
export interface Forwarding {
  readonly step: 'forwarding';
  readonly key: ApiKey;
  /** The span of the call to the upstream when the request is sampled, else null. */
  readonly call: CallSpan | null;
  /**
   * The forwarding engine's handle, once the body is in hand: null while a body is still being
   * received (body.ts). Set once, where the engine is called.
   */
  handle: ForwardHandle | null;
  /** How long the upstream took to its response headers, once they came. Set once. */
  upstreamSeconds: number | null;
}

/** Admitted lookup (CONTRACT §4), answered by the gateway (lookup.ts), then its answer. */
export interface LookingUp {
  readonly step: 'lookup';
  readonly key: ApiKey;
  /** With `leads.upstream`, how long the lead took to find, once found (the log line's upstream_ms). */
  upstreamSeconds: number | null;
}

/** Answered in place with success: a CORS preflight (no key), or forward-auth's 200 (its key). */
export interface Answered {
  readonly step: 'answered';
  readonly kind: 'preflight' | 'auth';
  readonly key: ApiKey | null;
}

/** The response closed (answered or not) and the request was closed out: nothing more is known. */
export interface Closed {
  readonly step: 'closed';
}

/** Every request starts here; one object for all. */
export const ENTERED: Entered = { step: 'entered' };
/** Every request ends here; one object for all. */
export const CLOSED: Closed = { step: 'closed' };

/** The key the request is known by in `phase` (for the metrics, the log line, a refusal's CORS). */
export function keyOf(phase: Phase): ApiKey | null {
  return phase.step === 'entered' || phase.step === 'closed' ? null : phase.key;
}
