import { GatewayError } from './errors.js';

export const API_PREFIX = '/api/v2/merchant/';
const LOOKUP_PREFIX = `${API_PREFIX}leads/`;

export interface RoutedPath {
  /** The path as received (no query): what is forwarded. */
  readonly path: string;
  /** The raw query string without `?`, or '' when there is none. */
  readonly query: string;
  /** The decoded `:id` when the path is the lead lookup `/api/v2/merchant/leads/:id`, else null. */
  readonly lookupId: string | null;
}

// Anything a server or proxy behind us might read differently from the raw bytes: encoded dots,
// slashes, backslashes, NULs, repeated slashes, backslashes and dot segments.
// Double encoding (%25xx) too: a backend that decodes twice would see the second layer.
const AMBIGUOUS = /%2e|%2f|%5c|%00|%25[0-9a-f]{2}|\/\/|\\|\/\.\.?(?:\/|$)/i;

/**
 * CONTRACT §3.1. A path is accepted only in its one canonical spelling under the prefix. A path
 * that would reach the prefix after decoding, case folding, slash folding or dot-segment
 * resolution is refused with 400 rather than forwarded; other paths are 404.
 */
export function routePath(rawUrl: string): RoutedPath | GatewayError {
  const q = rawUrl.indexOf('?');
  const path = q === -1 ? rawUrl : rawUrl.slice(0, q);
  const query = q === -1 ? '' : rawUrl.slice(q + 1);
  const prefixed = path.startsWith(API_PREFIX);
  if (prefixed && !AMBIGUOUS.test(path)) {
    return { path, query, lookupId: lookupIdOf(path) };
  }
  if (prefixed || normalise(path).startsWith(API_PREFIX)) {
    return new GatewayError(
      'bad_path',
      'the path is not in canonical form (case, encoding, slashes or dot segments)',
    );
  }
  return new GatewayError('not_found', 'no such endpoint');
}

function lookupIdOf(path: string): string | null {
  if (!path.startsWith(LOOKUP_PREFIX)) return null;
  const segment = path.slice(LOOKUP_PREFIX.length);
  if (segment === '' || segment.includes('/')) return null;
  try {
    return decodeURIComponent(segment);
  } catch {
    return null;
  }
}

/** What a lenient server might make of a path: used only to spot lookalikes of the prefix. */
export function normalise(path: string): string {
  let decoded = path;
  for (let i = 0; i < 3; i++) {
    let next: string;
    try {
      next = decodeURIComponent(decoded);
    } catch {
      next = decoded.replace(/%([0-9a-f]{2})/gi, (_m, hex: string) =>
        String.fromCharCode(Number.parseInt(hex, 16)),
      );
    }
    if (next === decoded) break;
    decoded = next;
  }
  const segments: string[] = [];
  for (const segment of decoded.replace(/\\/g, '/').split('/')) {
    if (segment === '' || segment === '.') continue;
    if (segment === '..') segments.pop();
    else segments.push(segment);
  }
  const trailing = /[/\\]\.{0,2}$/.test(decoded) ? '/' : '';
  return `/${segments.join('/')}${segments.length > 0 ? trailing : ''}`.toLowerCase();
}
