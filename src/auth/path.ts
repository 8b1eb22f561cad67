import { GatewayError } from '../contract/errors.js';

export const API_PREFIX = '/api/v2/merchant/';
const LOOKUP_SEGMENT = 'leads';

export interface RoutedPath {
  /** The path as received (no query): what is forwarded. */
  readonly path: string;
  /** The raw query string without `?`, or '' when there is none. */
  readonly query: string;
  /** The decoded `:id` when the path is the lead lookup `/api/v2/merchant/leads/:id`, else null. */
  readonly lookupId: string | null;
}

const badPath = (why: string) => new GatewayError('bad_path', `the path is not in canonical form (${why})`);

/** Characters a path may hold as they are: visible ASCII without `\`, `;` and `#`. */
const PLAIN = /^[\x21-\x7e]*$/;
// %XX escapes that a server behind us could read as something else: unreserved characters
// (RFC 3986 §6.2.2.2 says to decode them, so `%6Ceads` is `leads`), `/` `\` `;` `.` `%` `#`,
// `?` (decoded, it would end the path), and control characters.
const FORBIDDEN_ESCAPE = /%(?:[46][1-9a-f]|[57][0-9a]|3[0-9bf]|2[35def]|5[cf]|7e|[01][0-9a-f]|7f)/i;

/**
 * CONTRACT §3.1. A path under the prefix is accepted only in its one canonical spelling. A path
 * that a lenient server would read as under the prefix (after decoding, case folding, slash
 * folding, `;` parameters or dot segments) is refused with 400, never forwarded; so is every
 * non-canonical spelling of the lookup route. Other paths are 404.
 */
export function routePath(rawUrl: string): RoutedPath | GatewayError {
  if (rawUrl.includes('#')) return badPath('a fragment is not part of a request target');
  const q = rawUrl.indexOf('?');
  const path = q === -1 ? rawUrl : rawUrl.slice(0, q);
  const query = q === -1 ? '' : rawUrl.slice(q + 1);
  if (!path.startsWith(API_PREFIX)) {
    return reachesPrefix(path) ? badPath('case, encoding, slashes or dot segments') : notFound();
  }
  const why = nonCanonical(path);
  if (why !== null) return badPath(why);
  const segments = path.slice(API_PREFIX.length).split('/');
  const first = segments[0] ?? '';
  if (first !== LOOKUP_SEGMENT) {
    return first.toLowerCase() === LOOKUP_SEGMENT ? badPath('letter case') : { path, query, lookupId: null };
  }
  if (segments.length === 1) return { path, query, lookupId: null };
  const id = segments[1] ?? '';
  // `/leads/`, `/leads/x/`: a lenient router would take these for the lookup.
  if (id === '' || (segments.length === 3 && segments[2] === '')) return badPath('a trailing slash');
  if (segments.length > 2) return { path, query, lookupId: null };
  return { path, query, lookupId: decodeURIComponent(id) };
}

const notFound = () => new GatewayError('not_found', 'no such endpoint');

/** Why a path that starts with the prefix is not canonical, or null when it is. */
function nonCanonical(path: string): string | null {
  if (!PLAIN.test(path)) return 'characters outside visible ASCII';
  if (path.includes('\\')) return 'a backslash';
  if (path.includes(';')) return 'a ";" path parameter';
  if (path.includes('%')) {
    const why = nonCanonicalEscapes(path);
    if (why !== null) return why;
  }
  // An empty segment before the last one: the last may be empty (a trailing slash).
  if (path.includes('//')) return 'repeated slashes';
  if (path.includes('/.') && DOT_SEGMENT.test(path)) return 'dot segments';
  return null;
}

const DOT_SEGMENT = /\/\.\.?(?:\/|$)/;

function nonCanonicalEscapes(path: string): string | null {
  if (FORBIDDEN_ESCAPE.test(path)) return 'a percent-encoded character that must be sent as it is';
  try {
    decodeURIComponent(path);
  } catch {
    return 'a malformed percent-encoding, or bytes that are not UTF-8';
  }
  return null;
}

/**
 * True when a lenient server could read `path` as under the prefix: one that merges `//` but
 * leaves dot segments to the next hop (`/api//v2/merchant/..` reads as `/api/v2/merchant/..`),
 * or one that resolves both.
 */
function reachesPrefix(path: string): boolean {
  const folded = fold(path);
  return folded.replace(/\/{2,}/g, '/').startsWith(API_PREFIX) || resolveDots(folded).startsWith(API_PREFIX);
}

/** What a lenient server might make of a path before `//` and dot segments: only to spot lookalikes. */
function fold(path: string): string {
  let decoded = path;
  for (let i = 0; i < 3; i++) {
    const next = decoded.replace(/%([0-9a-f]{2})/gi, (_m, hex: string) =>
      String.fromCharCode(Number.parseInt(hex, 16)),
    );
    if (next === decoded) break;
    decoded = next;
  }
  return decoded
    .replace(/\\/g, '/')
    .replace(/;[^/]*/g, '')
    .toLowerCase();
}

/** Empty and dot segments resolved: `//` is `/` here too. */
function resolveDots(path: string): string {
  const segments: string[] = [];
  for (const segment of path.split('/')) {
    if (segment === '' || segment === '.') continue;
    if (segment === '..') segments.pop();
    else segments.push(segment);
  }
  const trailing = /\/\.{0,2}$/.test(path) && segments.length > 0 ? '/' : '';
  return `/${segments.join('/')}${trailing}`;
}

/** What a lenient server might make of a path: decoded, folded, dot segments resolved. */
export function normalise(path: string): string {
  return resolveDots(fold(path));
}
