/**
 * Where the gateway is in its life (serving, draining, stopped), shared by the listeners' handlers and the gateway's drain (CONTRACT §7).
 *
 * When kept-alive connections are closed is Envoy's gradual drain: for the first half of
 * `shutdown.delay_s` answers keep their connection (the endpoint removal is still on its way, so
 * a client told to reconnect may well land on this pod again); over the second half each answer
 * carries `Connection: close` with a chance that rises from 0 to 1, so the clients' reconnects
 * spread over that time instead of arriving at once; once the delay is over every answer does,
 * and the idle connections are closed with the listener. docs/guides/operating.md has the measurements.
 */
export interface Lifecycle {
  /** SIGTERM seen: /readyz is 503. */
  draining: boolean;
  /** The listener is closed: a request that still arrives on an open connection is refused. */
  stopped: boolean;
  /** From when (ms since the epoch) answers may close their connection. */
  closeFrom: number;
  /** From when every answer closes its connection. */
  closeBy: number;
}

export function serving(): Lifecycle {
  return {
    draining: false,
    stopped: false,
    closeFrom: Number.POSITIVE_INFINITY,
    closeBy: Number.POSITIVE_INFINITY,
  };
}

/** SIGTERM: not ready from now; connections close over the second half of `delayMs`. */
export function startDrain(lifecycle: Lifecycle, delayMs: number, now = Date.now()): void {
  lifecycle.draining = true;
  lifecycle.closeFrom = now + delayMs / 2;
  lifecycle.closeBy = now + delayMs;
}

/** Whether this answer is its connection's last because of the drain. */
export function closesConnection(lifecycle: Lifecycle, now = Date.now(), random = Math.random): boolean {
  if (!lifecycle.draining) return false;
  if (lifecycle.stopped || now >= lifecycle.closeBy) return true;
  if (now < lifecycle.closeFrom) return false;
  return random() < (now - lifecycle.closeFrom) / (lifecycle.closeBy - lifecycle.closeFrom);
}
