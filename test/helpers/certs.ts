import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, renameSync, symlinkSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Certificates made by `openssl` for a test, in a fresh temp folder: nothing private is committed.
 * `ca` signs a server certificate for 127.0.0.1/localhost and client certificates.
 */
export interface TestPki {
  readonly dir: string;
  readonly caCert: string;
  /** A new server pair signed by the CA; `days` < 0 makes one already expired; `dns`: more names. */
  server(name: string, days?: number, dns?: readonly string[]): { cert: string; key: string };
  /** A client pair signed by this CA (or by a CA of its own with `foreign`). */
  client(name: string, foreign?: boolean): { cert: string; key: string };
}

function openssl(args: readonly string[], cwd: string): void {
  execFileSync('openssl', args, { cwd, stdio: 'ignore' });
}

export function makePki(): TestPki {
  const dir = mkdtempSync(join(tmpdir(), 'leadgate-pki-'));
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes'];
  const newCa = (name: string) =>
    openssl(
      [
        'req',
        '-x509',
        ...ec,
        '-keyout',
        `${name}.key`,
        '-out',
        `${name}.crt`,
        '-days',
        '30',
        '-subj',
        `/CN=${name}`,
      ],
      dir,
    );
  newCa('ca');
  newCa('other-ca');
  writeFileSync(
    join(dir, 'server.ext'),
    'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n',
  );
  writeFileSync(join(dir, 'client.ext'), 'extendedKeyUsage=clientAuth\n');
  const issue = (name: string, ext: string, ca: string, days: number, dns: readonly string[] = []) => {
    if (dns.length > 0) {
      ext = `${name}.ext`;
      writeFileSync(
        join(dir, ext),
        `subjectAltName=IP:127.0.0.1,DNS:localhost,${dns.map((d) => `DNS:${d}`).join(',')}\nextendedKeyUsage=serverAuth\n`,
      );
    }
    openssl(
      ['req', '-new', ...ec, '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=${name}`],
      dir,
    );
    openssl(
      [
        'x509',
        '-req',
        '-in',
        `${name}.csr`,
        '-CA',
        `${ca}.crt`,
        '-CAkey',
        `${ca}.key`,
        '-CAcreateserial',
        '-days',
        String(days),
        '-extfile',
        ext,
        '-out',
        `${name}.crt`,
      ],
      dir,
    );
    return { cert: join(dir, `${name}.crt`), key: join(dir, `${name}.key`) };
  };
  return {
    dir,
    caCert: join(dir, 'ca.crt'),
    server: (name, days = 30, dns = []) => issue(name, 'server.ext', 'ca', days, dns),
    client: (name, foreign = false) => issue(name, 'client.ext', foreign ? 'other-ca' : 'ca', 30),
  };
}

/**
 * A folder laid out as Kubernetes mounts a Secret: `tls.crt` → `..data/tls.crt`, `..data` → a
 * timestamped folder; `swap` writes a new folder and renames `..data` over, atomically.
 */
export function secretVolume(files: Record<string, string>): {
  dir: string;
  swap(next: Record<string, string>): void;
} {
  const dir = mkdtempSync(join(tmpdir(), 'leadgate-secret-'));
  let n = 0;
  const swap = (next: Record<string, string>) => {
    const version = `..2026_11_28_${n++}`;
    mkdirSync(join(dir, version));
    for (const [name, content] of Object.entries(next)) writeFileSync(join(dir, version, name), content);
    symlinkSync(version, join(dir, '..data_tmp'));
    renameSync(join(dir, '..data_tmp'), join(dir, '..data'));
  };
  swap(files);
  for (const name of Object.keys(files)) symlinkSync(join('..data', name), join(dir, name));
  return { dir, swap };
}

/** The serial number of the certificate a fresh TLS connection to `port` is shown. */
export function servedSerial(port: number, ca: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = https.request(
      { host: '127.0.0.1', port, path: '/healthz-probe', ca, agent: false },
      (res) => {
        const socket = res.socket as import('node:tls').TLSSocket;
        resolve(socket.getPeerCertificate().serialNumber);
        res.resume();
      },
    );
    req.on('error', reject);
    req.end();
  });
}

/**
 * `openssl s_client` against a port (a child process: the gateway shares this event loop), with
 * `input` written once the handshake is done, read until the server closes.
 */
export function sClient(
  port: number,
  args: readonly string[],
  input = '',
): Promise<{ ok: boolean; out: string }> {
  return new Promise((resolve) => {
    // -ign_eof: with a request, read until the server closes; without, end after the handshake
    const eof = input === '' ? [] : ['-ign_eof'];
    const child = spawn('openssl', ['s_client', '-connect', `127.0.0.1:${port}`, ...eof, ...args]);
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (out += c.toString()));
    const timer = setTimeout(() => child.kill(), 10_000);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ ok: code === 0, out });
    });
    child.stdin.end(input);
  });
}
