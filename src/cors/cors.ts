import type { IncomingMessage } from 'node:http';
import type { ApiKey, Config } from '../config/types.js';

const ALLOWED_HEADERS = 'x-apikey, x-source, x-leadtoken, x-timestamp, x-leaddigest, content-type';
const ALLOWED_METHODS = 'GET, HEAD, POST, PUT, PATCH, DELETE';
const EXPOSED_HEADERS = 'x-request-id';

export type CorsHeaders = Readonly<Record<string, string>>;

export interface CorsPolicy {
  /** True for a CORS preflight: OPTIONS with Origin and Access-Control-Request-Method. */
  isPreflight(req: IncomingMessage): boolean;
  /** The grant for a preflight from `origin`, or null when no key may be used from there. */
  preflight(origin: string): CorsHeaders | null;
  /** Headers for an actual response to `origin` (refusals too); `key` is null before it is known. */
  grant(origin: string | undefined, key: ApiKey | null): CorsHeaders;
  /** False when `key` names its own `cors_origins` and `origin` is not one of them. */
  allows(origin: string | undefined, key: ApiKey): boolean;
}

const VARY_ONLY: CorsHeaders = Object.freeze({ vary: 'Origin' });
/** No CORS headers (CORS off): compared by identity on the hot path. */
export const NO_CORS: CorsHeaders = Object.freeze({});

/**
 * Storefront browsers (issue 5). An origin is granted when it is in `cors.origins`, or — once
 * the key is known and names `cors_origins` — in the key's narrower list. Never `*`.
 */
export function createCorsPolicy(config: Config): CorsPolicy {
  const global = config.cors.origins;
  const anyKey = new Set<string>(global);
  for (const o of config.keys.keyCorsOrigins()) anyKey.add(o);
  const enabled = anyKey.size > 0;
  const maxAge = String(config.cors.maxAgeS);

  const allowedFor = (key: ApiKey | null): ReadonlySet<string> =>
    key === null ? global : (key.corsOrigins ?? global);

  return {
    isPreflight(req) {
      return (
        req.method === 'OPTIONS' &&
        req.headers.origin !== undefined &&
        req.headers['access-control-request-method'] !== undefined
      );
    },
    preflight(origin) {
      if (!anyKey.has(origin)) return null;
      return {
        'access-control-allow-origin': origin,
        'access-control-allow-methods': ALLOWED_METHODS,
        'access-control-allow-headers': ALLOWED_HEADERS,
        'access-control-max-age': maxAge,
        vary: 'Origin',
      };
    },
    grant(origin, key) {
      if (!enabled) return NO_CORS;
      if (origin === undefined || !(key === null ? anyKey : allowedFor(key)).has(origin)) return VARY_ONLY;
      return {
        'access-control-allow-origin': origin,
        'access-control-expose-headers': EXPOSED_HEADERS,
        vary: 'Origin',
      };
    },
    allows(origin, key) {
      return origin === undefined || key.corsOrigins === null || key.corsOrigins.has(origin);
    },
  };
}
