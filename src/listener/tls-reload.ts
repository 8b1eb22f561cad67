import type { Server as TlsServer } from 'node:tls';
import type { ListenerSettings } from './settings.js';
import { type LoadedPair, loadPair } from './tls.js';
import type { ListenerDeps } from './types.js';

/** A listener's certificate pair: the one it starts with, and its reloads on file change. */
export interface CertificateWatch {
  readonly initial: LoadedPair;
  /** From now on, a good new pair becomes `server`'s secure context. */
  attach(server: TlsServer): void;
  stop(): void;
}

/**
 * CONTRACT §11: the pair is read at start (a problem throws: one line naming the file) and again
 * whenever a file changes, the `..data` swap included. New handshakes use a good new pair, open
 * connections keep theirs; a pair that does not load, match or is out of date is refused and the
 * old one keeps serving (logged, counted).
 */
export function watchCertificate(
  name: ListenerDeps['name'],
  tls: NonNullable<ListenerSettings['tls']>,
  deps: Pick<ListenerDeps, 'metrics' | 'watch' | 'log'>,
): CertificateWatch {
  const nowS = () => Math.floor(Date.now() / 1000);
  const first = loadPair(tls, nowS());
  if (!('options' in first)) throw new Error(`listener ${name}: ${first.file}: ${first.message}`);
  const { metrics } = deps;
  let current: LoadedPair = first;
  let server: TlsServer | null = null;
  metrics.certificateExpiry.set({ listener: name }, current.expiresAt);
  const files = [tls.certFile, tls.keyFile, ...(tls.clientCaFile === null ? [] : [tls.clientCaFile])];
  const reload = () => {
    const next = loadPair(tls, nowS());
    if (!('options' in next)) {
      metrics.tlsReloads.inc({ listener: name, result: 'failed' });
      deps.log(
        'error',
        { component: 'tls', listener: name, file: next.file, reason: next.message },
        'certificate reload refused; the previous pair keeps serving',
      );
      return;
    }
    if (samePair(current, next)) return;
    server?.setSecureContext(next.options);
    current = next;
    metrics.tlsReloads.inc({ listener: name, result: 'ok' });
    metrics.certificateExpiry.set({ listener: name }, next.expiresAt);
    deps.log(
      'info',
      { component: 'tls', listener: name, expires_at: new Date(next.expiresAt * 1000).toISOString() },
      'certificate reloaded',
    );
  };
  const watcher = deps.watch(files, reload);
  return {
    initial: first,
    attach(s) {
      server = s;
    },
    stop: () => watcher.close(),
  };
}

function samePair(a: LoadedPair, b: LoadedPair): boolean {
  const bytes = (p: LoadedPair, k: 'cert' | 'key' | 'ca') => p.options[k] as Buffer | undefined;
  return (['cert', 'key', 'ca'] as const).every((k) => {
    const x = bytes(a, k);
    const y = bytes(b, k);
    return x === undefined || y === undefined ? x === y : x.equals(y);
  });
}
