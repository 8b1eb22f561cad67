/**
 * The catalogue of refusals: every answer leadgate gives instead of the upstream's has a stable
 * `code` listed here, with its HTTP status and title. Nothing else decides what a client sees.
 * A code, once shipped, keeps its meaning (CONTRACT §6).
 */
export const CATALOGUE = {
  bad_request: { status: 400, title: 'Bad Request' },
  bad_path: { status: 400, title: 'Bad Request' },
  missing_source: { status: 400, title: 'Bad Request' },
  invalid_source: { status: 400, title: 'Bad Request' },
  invalid_timestamp: { status: 400, title: 'Bad Request' },
  missing_customer_id: { status: 400, title: 'Bad Request' },
  missing_api_key: { status: 401, title: 'Unauthorized' },
  invalid_api_key: { status: 401, title: 'Unauthorized' },
  expired_api_key: { status: 401, title: 'Unauthorized' },
  revoked_api_key: { status: 401, title: 'Unauthorized' },
  missing_lead_credential: { status: 401, title: 'Unauthorized' },
  invalid_digest: { status: 401, title: 'Unauthorized' },
  stale_timestamp: { status: 401, title: 'Unauthorized' },
  invalid_lead_token: { status: 401, title: 'Unauthorized' },
  expired_lead_token: { status: 401, title: 'Unauthorized' },
  revoked_lead_token: { status: 401, title: 'Unauthorized' },
  digest_not_accepted: { status: 401, title: 'Unauthorized' },
  replayed_digest: { status: 401, title: 'Unauthorized' },
  origin_not_allowed: { status: 403, title: 'Forbidden' },
  method_not_allowed: { status: 403, title: 'Forbidden' },
  cors_origin_not_allowed: { status: 403, title: 'Forbidden' },
  not_found: { status: 404, title: 'Not Found' },
  lead_not_found: { status: 404, title: 'Not Found' },
  request_timeout: { status: 408, title: 'Request Timeout' },
  body_too_large: { status: 413, title: 'Content Too Large' },
  headers_too_large: { status: 431, title: 'Request Header Fields Too Large' },
  rate_limited: { status: 429, title: 'Too Many Requests' },
  internal_error: { status: 500, title: 'Internal Server Error' },
  upstream_unavailable: { status: 502, title: 'Bad Gateway' },
  shutting_down: { status: 503, title: 'Service Unavailable' },
  store_unavailable: { status: 503, title: 'Service Unavailable' },
  upstream_timeout: { status: 504, title: 'Gateway Timeout' },
} as const satisfies Record<string, { status: number; title: string }>;

export type ErrorCode = keyof typeof CATALOGUE;

/**
 * A refusal. `detail` is written for the caller and must never hold a credential: callers pass
 * fixed sentences, not values taken from the request.
 */
export class GatewayError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly title: string;
  readonly detail: string;

  constructor(code: ErrorCode, detail: string) {
    super(`${code}: ${detail}`);
    this.name = 'GatewayError';
    this.code = code;
    this.status = CATALOGUE[code].status;
    this.title = CATALOGUE[code].title;
    this.detail = detail;
  }
}

export function isGatewayError(value: unknown): value is GatewayError {
  return value instanceof GatewayError;
}
