import type { IncomingMessage } from 'node:http';
import type { ServerHttp2Stream } from 'node:http2';
import { Readable } from 'node:stream';
import { GatewayError } from '../contract/errors.js';
import { announcesBody } from './protocol.js';

/** What `limits:` says about request bodies (config/types.ts). */
export interface BodyLimits {
  /** A body that ends within this many bytes is received whole before the upstream is asked. */
  readonly bufferBodyBytes: number;
  /** Bytes per second a body must average once the grace has passed (0: no minimum). */
  readonly minBodyRateBps: number;
  readonly bodyRateGraceMs: number;
  readonly maxBodyBytes: number | null;
}

/** A streamed body is handed on in writes of this size at least, or once per I/O turn. */
const COALESCE_BYTES = 64 * 1024;
/** How often the bodies in progress are checked against the minimum rate. */
const TICK_MS = 250;

/**
 * True when the request has a body: one announced (a length above 0, or chunks) or, on HTTP/2,
 * DATA frames to come: there a body needs no `content-length`, and a request has one unless its
 * HEADERS frame ended the stream. (nghttp2 refuses DATA beyond a declared length, so a declared 0
 * is none, as on HTTP/1.1.)
 */
export function hasBody(req: IncomingMessage): boolean {
  if (announcesBody(req)) return true;
  const stream = (req as { stream?: ServerHttp2Stream }).stream;
  return stream !== undefined && !stream.endAfterHeaders && req.headers['content-length'] !== '0';
}

export const bodyTooSlow = () =>
  new GatewayError('request_timeout', 'the request body arrived slower than the minimum data rate');

/**
 * One request body on its way to the upstream (issue 47, points 2 and 4):
 *
 * - A body that ends within `bufferBodyBytes` is read whole first, and only then is the upstream
 *   asked (`ready` gets a Buffer): a slow client never holds an upstream connection for a small
 *   body. A larger one is streamed once that much has arrived (`ready` gets this stream), so a
 *   client that declares a large body and sends little never takes an upstream connection either.
 * - The client's fragmentation stops here: what is handed on is coalesced into writes of 64 KiB,
 *   or whatever arrived in one I/O turn, so a body in 1-byte chunks costs what its bytes cost.
 * - Every `bodyRateGraceMs` window must bring `minBodyRateBps` on average (time the upstream was
 *   not taking the body does not count): else `fail` gets 408 `request_timeout`.
 * - Past `maxBodyBytes` (counted as it comes, chunked too): `fail` gets 413 `body_too_large`.
 * - An upstream that takes none of the body for `stallMs` (its `timeout_ms`): 504 `upstream_timeout`.
 */
export class RequestBody extends Readable {
  private chunks: Buffer[] = [];
  private size = 0;
  private received = 0;
  private streaming = false;
  private flushing: NodeJS.Immediate | null = null;
  private waiting = false;
  /** The window the rate is measured over: when it started and the bytes since. */
  private windowAt = performance.now();
  private windowBytes = 0;
  private waitingSince = 0;
  private finished = false;

  constructor(
    private readonly req: IncomingMessage,
    private readonly limits: BodyLimits,
    private readonly watch: BodyWatch,
    private readonly ready: (body: Buffer | RequestBody) => void,
    private readonly fail: (error: GatewayError) => void,
    /** The upstream took no body bytes this long: 504 (its own `timeout_ms`). */
    private readonly stallMs: number,
  ) {
    super({ highWaterMark: COALESCE_BYTES });
    req.on('data', (chunk: Buffer) => this.gather(chunk));
    req.on('end', () => this.ended());
    // The client left mid-body (a body that arrived whole is the upstream's to take now).
    req.on('close', () => {
      if (!req.complete) this.stop();
    });
    // Watched until the upstream has taken it all (or it was stopped).
    this.once('end', () => watch.delete(this));
    this.once('close', () => watch.delete(this));
    watch.add(this);
  }

  private gather(chunk: Buffer): void {
    if (this.finished) return;
    this.received += chunk.length;
    this.windowBytes += chunk.length;
    const max = this.limits.maxBodyBytes;
    if (max !== null && this.received > max) {
      this.stop();
      this.fail(new GatewayError('body_too_large', `the request body is larger than ${max} bytes`));
      return;
    }
    this.chunks.push(chunk);
    this.size += chunk.length;
    if (!this.streaming) {
      if (this.size > this.limits.bufferBodyBytes) this.stream();
      return;
    }
    if (this.size >= COALESCE_BYTES) this.flush();
    else this.flushing ??= setImmediate(flushSoon, this);
  }

  private ended(): void {
    if (this.finished) return;
    this.finished = true;
    if (!this.streaming) {
      this.watch.delete(this);
      const whole = this.chunks.length === 1 ? (this.chunks[0] as Buffer) : Buffer.concat(this.chunks);
      this.chunks = [];
      this.ready(whole);
      return;
    }
    this.flush();
    this.push(null);
  }

  /** The body is too large to keep: the upstream is asked now and gets it as it comes. */
  private stream(): void {
    this.streaming = true;
    this.ready(this);
    if (this.size > 0) this.flush();
  }

  /** Hands on what has gathered, as one write. */
  flush(): void {
    if (this.flushing !== null) {
      clearImmediate(this.flushing);
      this.flushing = null;
    }
    if (this.size === 0 || this.destroyed) return;
    const out = this.chunks.length === 1 ? (this.chunks[0] as Buffer) : Buffer.concat(this.chunks, this.size);
    this.chunks = [];
    this.size = 0;
    if (!this.push(out)) {
      this.waiting = true;
      this.req.pause();
    }
  }

  override _read(): void {
    if (!this.waiting) return;
    this.waiting = false;
    this.req.resume();
  }

  /**
   * Checked every tick. The rate is measured over windows of `bodyRateGraceMs`: each must bring
   * `minBodyRateBps` on average, the first included (the grace). A fast start buys no slow end.
   * While the upstream does not take the body, nothing is measured (the window starts again).
   */
  check(now: number): void {
    // The upstream is not taking what is here: while the client sends, or after it has sent all.
    if (this.waiting || (this.finished && this.readableLength > 0)) {
      this.windowAt = now;
      this.windowBytes = 0;
      if (this.waitingSince === 0) this.waitingSince = now;
      if (now - this.waitingSince < this.stallMs) return;
      this.stop();
      this.fail(new GatewayError('upstream_timeout', 'the upstream did not take the request body in time'));
      return;
    }
    this.waitingSince = 0;
    if (this.finished) return;
    const ms = now - this.windowAt;
    if (ms < this.limits.bodyRateGraceMs || this.limits.minBodyRateBps === 0) return;
    if (this.windowBytes >= (this.limits.minBodyRateBps * ms) / 1000) {
      this.windowAt = now;
      this.windowBytes = 0;
      return;
    }
    this.stop();
    this.watch.cut();
    this.fail(bodyTooSlow());
  }

  /**
   * No more checks or writes (the body failed, or its request closed). A stream that did not end
   * is destroyed: the upstream request it feeds stops (and its connection is closed by the engine).
   */
  stop(): void {
    if (this.flushing !== null) clearImmediate(this.flushing);
    this.flushing = null;
    this.watch.delete(this);
    this.finished = true;
    this.chunks = [];
    // no error: a pipe (http-proxy) would throw it
    if (this.streaming && !this.readableEnded && !this.destroyed) this.destroy();
  }
}

function flushSoon(body: RequestBody): void {
  body.flush();
}

/** Every body in progress on one listener, checked against the minimum rate by one timer. */
export class BodyWatch {
  private readonly bodies = new Set<RequestBody>();
  private timer: NodeJS.Timeout | null = null;

  constructor(private readonly onCut: () => void) {}

  add(body: RequestBody): void {
    this.bodies.add(body);
    if (this.timer === null) {
      this.timer = setInterval(tick, TICK_MS, this);
      this.timer.unref();
    }
  }

  delete(body: RequestBody): void {
    this.bodies.delete(body);
    if (this.bodies.size === 0 && this.timer !== null) {
      clearInterval(this.timer);
      this.timer = null;
    }
  }

  cut(): void {
    this.onCut();
  }

  /** For tests and metrics: bodies being watched. */
  get size(): number {
    return this.bodies.size;
  }

  onTick(): void {
    const now = performance.now();
    for (const body of this.bodies) body.check(now);
  }
}

function tick(watch: BodyWatch): void {
  watch.onTick();
}
