import net from 'node:net';

export interface RawResult {
  /** Everything the server sent, as latin1 text (byte for byte). */
  readonly text: string;
  /** The server closed (FIN or RST) before `waitMs` ran out. */
  readonly closed: boolean;
  /** Milliseconds from the first byte sent to the close (or to the end of the wait). */
  readonly ms: number;
  /** Bytes this client managed to write before the server stopped it. */
  readonly written: number;
}

export interface RawOptions {
  /** Longest wait for the server to close, in ms (default 3000). */
  readonly waitMs?: number;
  /** Keeps writing this chunk every `dripMs` until the server closes (a body that never ends). */
  readonly drip?: { readonly chunk: Buffer | string; readonly everyMs: number };
  /** Stop waiting once the received text satisfies this. */
  readonly until?: (text: string) => boolean;
}

/**
 * A raw TCP client: writes `parts` as they are (a string part is latin1 bytes; a number part is a
 * pause in ms), then reads until the server closes. Resets are an outcome, never a throw.
 */
export function raw(port: number, parts: ReadonlyArray<string | Buffer | number>, opts: RawOptions = {}) {
  return new Promise<RawResult>((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    const t0 = Date.now();
    let written = 0;
    let done = false;
    let drip: NodeJS.Timeout | null = null;
    const finish = (closed: boolean) => {
      if (done) return;
      done = true;
      if (drip) clearInterval(drip);
      clearTimeout(timer);
      socket.destroy();
      resolve({ text: Buffer.concat(chunks).toString('latin1'), closed, ms: Date.now() - t0, written });
    };
    const timer = setTimeout(() => finish(false), opts.waitMs ?? 3000);
    const send = (part: string | Buffer) => {
      if (socket.destroyed || !socket.writable) return;
      const buf = typeof part === 'string' ? Buffer.from(part, 'latin1') : part;
      written += buf.length;
      socket.write(buf);
    };
    socket.on('data', (d: Buffer) => {
      chunks.push(d);
      if (opts.until?.(Buffer.concat(chunks).toString('latin1'))) finish(false);
    });
    socket.on('error', () => finish(true));
    socket.on('close', () => finish(true));
    socket.on('connect', async () => {
      for (const part of parts) {
        if (typeof part === 'number') await new Promise((r) => setTimeout(r, part));
        else send(part);
      }
      const d = opts.drip;
      if (d) drip = setInterval(() => send(d.chunk), d.everyMs);
    });
  });
}

export interface RawResponse {
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly body: string;
}

/** Splits what a server sent into its whole responses (framed by content-length; interim 1xx kept). */
export function responses(text: string, opts: { head?: boolean } = {}): RawResponse[] {
  const out: RawResponse[] = [];
  let rest = text;
  while (rest.startsWith('HTTP/1.')) {
    const end = rest.indexOf('\r\n\r\n');
    if (end === -1) break;
    const [statusLine = '', ...lines] = rest.slice(0, end).split('\r\n');
    const headers: Record<string, string> = {};
    for (const line of lines) {
      const colon = line.indexOf(':');
      headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
    }
    const framed = opts.head
      ? { body: '', next: end + 4 }
      : headers['transfer-encoding'] === 'chunked'
        ? unchunk(rest, end + 4)
        : {
            body: rest.slice(end + 4, end + 4 + Number(headers['content-length'] ?? 0)),
            next: end + 4 + Number(headers['content-length'] ?? 0),
          };
    if (framed === null || rest.length < framed.next) break; // not all here yet
    out.push({ status: Number(statusLine.split(' ')[1]), headers, body: framed.body });
    rest = rest.slice(framed.next);
  }
  return out;
}

/** A request as bytes: request line, headers (in order, as given), then the body. */
export function request(line: string, headers: ReadonlyArray<readonly [string, string]>, body = ''): string {
  return `${line}\r\n${headers.map(([n, v]) => `${n}: ${v}\r\n`).join('')}\r\n${body}`;
}

/** A chunked body starting at `from`: its bytes and where the message ends, or null if incomplete. */
function unchunk(text: string, from: number): { body: string; next: number } | null {
  let at = from;
  let body = '';
  for (;;) {
    const eol = text.indexOf('\r\n', at);
    if (eol === -1) return null;
    const size = Number.parseInt(text.slice(at, eol), 16);
    if (Number.isNaN(size)) return null;
    if (size === 0) {
      const end = text.indexOf('\r\n\r\n', eol);
      return end === -1 ? null : { body, next: end + 4 };
    }
    if (text.length < eol + 2 + size + 2) return null;
    body += text.slice(eol + 2, eol + 2 + size);
    at = eol + 2 + size + 2;
  }
}
