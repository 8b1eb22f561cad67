import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PLACEHOLDERS, type Recorded, type RecordedClient } from '../bench/mix/mix.js';

/**
 * `npm run bench:record-mix`: records the header sets and orders real HTTP clients installed here
 * send, into bench/mix/clients.json (what the mixed-traffic load replays: bench/mix/mix.ts), as
 * write-schema.ts writes its files. A recording
 * server on 127.0.0.1 keeps each request's head byte for byte; each client sends one GET of the
 * bench's path with leadgate's three headers set through its own API (so they land where that
 * client puts a caller's headers), values as placeholders the load fills in. A client that is not
 * installed is left out and said so.
 */
const PATH = '/api/v2/merchant/orders';
const custom = { 'x-apikey': PLACEHOLDERS.apikey, 'x-source': 'web', 'x-leadtoken': PLACEHOLDERS.token };
const here = (file: string) => fileURLToPath(new URL(file, import.meta.url));

/**
 * A server that answers every request and hands the head of each GET of PATH to `next`'s waiter
 * (clients are run one at a time); the page Chromium loads first answers with a fetch.
 */
function recorder() {
  let waiting: ((head: string) => void) | null = null;
  const page = `<script>fetch(${JSON.stringify(PATH)}, { headers: ${JSON.stringify(custom)} })</script>`;
  const server = createServer((socket: Socket) => {
    let buf = '';
    socket.setEncoding('latin1').on('data', (chunk: string) => {
      buf += chunk;
      const end = buf.indexOf('\r\n\r\n');
      if (end < 0) return;
      const head = buf.slice(0, end);
      buf = '';
      const [type, body] = head.startsWith('GET / ') ? ['text/html', page] : ['text/plain', 'ok'];
      socket.end(
        `HTTP/1.1 200 OK\r\ncontent-type: ${type}\r\ncontent-length: ${body.length}\r\nconnection: close\r\n\r\n${body}`,
      );
      if (head.startsWith(`GET ${PATH} `)) waiting?.(head);
    });
    socket.on('error', () => {});
  });
  /** The next head, or null after `ms`; call before the client sends. */
  const next = (ms: number) =>
    new Promise<string | null>((resolve) => {
      const timer = setTimeout(() => resolve(null), ms);
      waiting = (head) => {
        clearTimeout(timer);
        waiting = null;
        resolve(head);
      };
    });
  return { server, next };
}

const run = (command: string, args: string[], ms = 30_000) =>
  new Promise<string | null>((resolve) =>
    execFile(command, args, { timeout: ms, encoding: 'utf8' }, (err, out) =>
      resolve(err ? null : out.trim()),
    ),
  );

/** Each client: its name, its version (null: not installed), and how it sends the GET to `url`. */
function clients(url: string, dir: string) {
  const h = Object.entries(custom);
  const py = `import json,sys\nh=${JSON.stringify(custom)}\n`;
  writeFileSync(
    join(dir, 'main.go'),
    `package main\nimport "net/http"\nfunc main() {\n  r, _ := http.NewRequest("GET", "${url}", nil)\n${h
      .map(([k, v]) => `  r.Header.Set("${k}", "${v}")\n`)
      .join('')}  res, err := http.DefaultClient.Do(r)\n  if err == nil { res.Body.Close() }\n}\n`,
  );
  return [
    {
      client: 'curl',
      version: () => run('curl', ['--version']).then((v) => v?.split(' ')[1] ?? null),
      send: () => run('curl', ['-s', '-o', '/dev/null', ...h.flatMap(([k, v]) => ['-H', `${k}: ${v}`]), url]),
    },
    {
      client: 'python urllib',
      version: () => run('python3', ['-c', 'import sys; print(sys.version.split()[0])']),
      send: () =>
        run('python3', [
          '-c',
          `${py}import urllib.request as u\nu.urlopen(u.Request("${url}", headers=h)).read()`,
        ]),
    },
    {
      client: 'python requests',
      version: () => run('python3', ['-c', 'import requests; print(requests.__version__)']),
      send: () => run('python3', ['-c', `${py}import requests\nrequests.get("${url}", headers=h)`]),
    },
    {
      client: 'go net/http',
      version: () => run('go', ['version']).then((v) => v?.split(' ')[2] ?? null),
      send: () => run('go', ['run', join(dir, 'main.go')], 120_000),
    },
    {
      client: 'php file_get_contents',
      version: () => run('php', ['-r', 'echo PHP_VERSION;']),
      send: () =>
        run('php', [
          '-r',
          `file_get_contents(${JSON.stringify(url)}, false, stream_context_create(["http" => ["header" => ${JSON.stringify(
            h.map(([k, v]) => `${k}: ${v}`).join('\r\n'),
          )}]]));`,
        ]),
    },
    {
      client: 'node fetch (undici)',
      version: () => Promise.resolve(process.version),
      send: () =>
        run(process.execPath, [
          '-e',
          `fetch(${JSON.stringify(url)}, { headers: ${JSON.stringify(custom)} }).then((r) => r.text())`,
        ]),
    },
    {
      client: 'chromium fetch()',
      version: () => run('chromium', ['--version']).then((v) => v?.split(' ')[1] ?? null),
      send: () =>
        run(
          'chromium',
          [
            '--headless',
            '--no-sandbox',
            '--disable-gpu',
            `--user-data-dir=${join(dir, 'chromium')}`,
            '--virtual-time-budget=3000',
            '--dump-dom',
            new URL('/', url).href,
          ],
          60_000,
        ),
    },
  ];
}

/** A request head as [name, value] pairs in order, the recording server's address as {host}. */
function parse(head: string, host: string): Array<[string, string]> {
  return head
    .split('\r\n')
    .slice(1)
    .map((line) => {
      const colon = line.indexOf(':');
      const value = line.slice(colon + 1).trim();
      return [line.slice(0, colon), value.split(host).join(PLACEHOLDERS.host)] as [string, string];
    });
}

async function main() {
  const { server, next } = recorder();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const host = `127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  const dir = mkdtempSync(join(tmpdir(), 'leadgate-record-'));
  const recorded: RecordedClient[] = [];
  try {
    for (const c of clients(`http://${host}${PATH}`, dir)) {
      const version = await c.version();
      if (version === null || version === '') {
        process.stderr.write(`${c.client}: not installed here, left out\n`);
        continue;
      }
      const arrived = next(60_000);
      const sent = c.send();
      const head = await arrived;
      await sent;
      if (head === null) {
        process.stderr.write(`${c.client}: sent nothing, left out\n`);
        continue;
      }
      recorded.push({ client: c.client, version, headers: parse(head, host) });
      process.stderr.write(`${c.client} ${version}: ${recorded.at(-1)?.headers.length} headers\n`);
    }
  } finally {
    server.close();
    rmSync(dir, { recursive: true, force: true });
  }
  const out: Recorded = { recorded: new Date().toISOString().slice(0, 10), path: PATH, clients: recorded };
  writeFileSync(here('../../bench/mix/clients.json'), `${JSON.stringify(out, null, 2)}\n`);
  process.stderr.write(`wrote bench/mix/clients.json: ${recorded.length} clients\n`);
}

await main();
