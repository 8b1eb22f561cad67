import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { Readable } from 'node:stream';
import type { GatewayError } from '../contract/errors.js';

/**
 * One request to pass on. The headers are final (hygiene was done by the caller) and belong to
 * this job: an engine may adapt the object in place rather than copy it.
 */
export interface ForwardJob {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly target: URL;
  readonly headers: OutgoingHttpHeaders;
  /**
   * The request body: none, received whole, or a stream (coalesced, size- and rate-checked by
   * body.ts). The request itself is never read by the engine.
   */
  readonly body: Buffer | Readable | null;
  /** Longest wait for the upstream's response headers, from when the body has been sent. */
  readonly timeoutMs: number;
  /** Set on the response, over what the upstream sent (CORS grant, request id). */
  readonly responseHeaders: Readonly<Record<string, string>>;
  /** Called once the upstream's response headers arrived, with the time it took. */
  onUpstreamResponse(seconds: number): void;
  /** Called when the upstream could not be used; the caller answers with the error. */
  onError(error: GatewayError): void;
}

/** A request being forwarded. */
export interface ForwardHandle {
  /** Stops the upstream request and answers with `error` (once), or cuts the answer if it started. */
  fail(error: GatewayError): void;
  /** The client's response closed (its exchange says so): an unfinished upstream request stops. */
  closed(): void;
}

/** The forwarding engine behind one small interface, so engines can be measured and swapped. */
export interface Forwarder {
  forward(job: ForwardJob): ForwardHandle;
  close(): void;
}
