import type { IncomingHttpHeaders } from 'node:http';
import { CREDENTIAL_HEADERS, FORWARDING_HEADERS, IDENTITY_HEADERS, nameKind } from '../auth/header-names.js';

/**
 * The one place that decides which client headers never reach the backend (CONTRACT §5, §10),
 * for both forwarding engines and for the forward-auth answer.
 *
 * By name, in every spelling a backend could read as the same name (auth/header-names.ts): the
 * identity headers leadgate sets, the credentials, the forwarding headers leadgate writes. By
 * exact name: hop-by-hop headers (RFC 9110 §7.6.1) and `expect` (leadgate answers 100-continue
 * itself); spelt with `_`, those and the framing headers too.
 */
const HOP_BY_HOP: ReadonlySet<string> = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authorization',
  'te',
  'trailer',
  'upgrade',
  'expect',
]);

/** Framing headers: never sent in an `_` spelling (the real ones are set by the engine). */
export const FRAMING: ReadonlySet<string> = new Set(['content-length', 'transfer-encoding', 'host']);

/** What to do with client headers whose name holds `_`: `drop` all (nginx's default) or `pass`. */
export type UnderscorePolicy = 'drop' | 'pass';

/** True when the client's header `name` may not be sent on to the backend. */
export function isReserved(name: string, underscores: UnderscorePolicy): boolean {
  if (HOP_BY_HOP.has(name)) return true;
  const kind = nameKind(name);
  if (kind !== null && kind !== 'override') return true;
  if (!name.includes('_')) return false;
  if (underscores === 'drop') return true;
  const dashed = name.replaceAll('_', '-');
  return HOP_BY_HOP.has(dashed) || FRAMING.has(dashed);
}

/** Headers whose value lists other headers' names: a proxy may drop what they name. */
const NAMING = ['connection', 'proxy-connection', 'trailer'] as const;

/** Exact names a proxy may pass to the forward-auth listener: the credentials, its own request id. */
const EXPECTED = new Set<string>([...CREDENTIAL_HEADERS, 'x-request-id']);
/** Proxies send the forwarding headers under these names only; CGI would read an alias as one. */
const FORWARDING_EXACT: ReadonlySet<string> = new Set(FORWARDING_HEADERS);

/**
 * Forward-auth (CONTRACT §10): why a call carrying a client's copy of an identity or credential
 * header is refused, or null. The proxy cannot be trusted to remove every spelling of them, nor
 * to keep leadgate's values when the client's `Connection` names them, so any of these is a
 * 400: a spelling other than the exact credential names and `x-request-id` (which proxies set),
 * an exact `x-lead-id` / `x-api-key-*` (only leadgate says who is calling), and a
 * `Connection`, `Proxy-Connection` or `Trailer` naming any of them.
 */
export function forwardAuthRefusal(headers: IncomingHttpHeaders): string | null {
  for (const name in headers) {
    const kind = nameKind(name);
    if ((kind === 'identity' || kind === 'credential') && !EXPECTED.has(name)) {
      return 'the request carries its own copy of an identity or credential header';
    }
    if (kind === 'forwarding' && !FORWARDING_EXACT.has(name)) {
      return 'the request carries a client-address header in another spelling';
    }
  }
  for (const name of NAMING) {
    const value = headers[name];
    if (value === undefined) continue;
    for (const token of (Array.isArray(value) ? value.join(',') : value).split(',')) {
      const kind = nameKind(token.trim());
      if (kind === 'identity' || kind === 'credential') {
        return `the ${name} header names an identity or credential header`;
      }
    }
  }
  return null;
}

/** The identity headers a proxy that keeps a client's copy (Envoy) must remove on allow. */
const REMOVED_ON_ALLOW = [...IDENTITY_HEADERS.filter((n) => n !== 'x-request-id'), ...CREDENTIAL_HEADERS];

/**
 * `x-envoy-auth-headers-to-remove` for an allow answer that sets `set`: the identity headers
 * leadgate did not set (Envoy overwrites only those in the answer) and the credentials, which
 * stay at the edge (§5).
 */
export function headersToRemove(set: Readonly<Record<string, string>>): string {
  return REMOVED_ON_ALLOW.filter((n) => !(n in set)).join(', ');
}
