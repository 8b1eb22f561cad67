import { CATALOGUE, type ErrorCode, GatewayError } from '../contract/errors.js';

/** When each code is answered, and a detail it carries: docs/reference/errors.md is generated from this. */
export const ERROR_DOCS: Readonly<Record<ErrorCode, { readonly when: string; readonly detail: string }>> = {
  bad_request: {
    when: 'not valid HTTP/1.1 as an intermediary must read it (framing, Host, version, CONNECT); on the forward-auth listener also a client copy of an identity header, or a call naming two requests',
    detail: 'the request has more than one Host header',
  },
  bad_path: {
    when: 'a path under the prefix that is not in its one canonical spelling',
    detail: 'the path is not in canonical form (repeated slashes)',
  },
  missing_source: { when: 'no `x-source` header', detail: 'the x-source header is required (web or mobile)' },
  invalid_source: {
    when: '`x-source` is not `web` or `mobile`',
    detail: 'the x-source header must be web or mobile',
  },
  invalid_timestamp: {
    when: '`x-timestamp` missing or not whole unix seconds, on a digest lookup',
    detail: 'x-timestamp must be whole unix seconds',
  },
  missing_customer_id: {
    when: 'a digest lookup without exactly one `customer_id` query parameter',
    detail: 'the lookup needs one customer_id query parameter',
  },
  missing_api_key: { when: 'no `x-apikey` header', detail: 'the x-apikey header is required' },
  invalid_api_key: { when: 'the key is not one the config knows', detail: 'the API key is not valid' },
  expired_api_key: {
    when: 'the key is past its `expires_at`',
    detail: 'the API key has expired',
  },
  revoked_api_key: {
    when: 'the key was revoked with `leadgate revoke --key` (until `leadgate unrevoke`)',
    detail: 'the API key has been revoked',
  },
  missing_lead_credential: {
    when: 'a READ STOREFRONT key without `x-leadtoken` (or `x-leaddigest` on the lookup)',
    detail: 'a READ STOREFRONT key needs x-leadtoken (or x-leaddigest on the lookup)',
  },
  invalid_digest: {
    when: "the digest does not match the customer id and timestamp under the key's secret",
    detail: 'the lead digest does not match',
  },
  stale_timestamp: {
    when: '`x-timestamp` further from the gateway clock than `digest.max_skew_s`',
    detail: 'x-timestamp is too far from the gateway clock',
  },
  invalid_lead_token: {
    when: 'the token is malformed, not HS256, not signed with this key (or not with the live secret its kid names), or its claims fail',
    detail: 'the lead token is malformed, not HS256, or not signed with this key',
  },
  expired_lead_token: { when: 'the token is past `exp`', detail: 'the lead token has expired' },
  revoked_lead_token: {
    when: "`leadgate revoke --lead` named the token's lead after the token was issued (its `iat`, else `exp` − `lead_token.ttl_s`); a token issued later is accepted",
    detail: "the lead's tokens issued until now have been revoked",
  },
  digest_not_accepted: {
    when: '`x-leaddigest` on anything but the lookup',
    detail: 'x-leaddigest is accepted only on the lead lookup',
  },
  replayed_digest: {
    when: 'a digest used before, with `digest.single_use`',
    detail: 'this lead digest was already used',
  },
  origin_not_allowed: {
    when: "the client address is not in the key's `origin_ips`",
    detail: 'this API key may not be used from this address',
  },
  method_not_allowed: {
    when: 'a READ key with a method other than GET or HEAD, or a method override header naming one',
    detail: 'a READ key may only GET or HEAD',
  },
  cors_origin_not_allowed: {
    when: 'the browser `Origin` is not allowed for the key (or for any key, on a preflight)',
    detail: 'this API key may not be used from this origin',
  },
  not_found: { when: 'a path outside `/api/v2/merchant/`', detail: 'no such endpoint' },
  lead_not_found: {
    when: 'the lookup found no lead for the customer id or token',
    detail: 'no lead matches',
  },
  request_timeout: {
    when: 'headers or body not received within `limits.header_timeout_ms` / `request_timeout_ms`, or a body slower than `limits.min_body_rate_bps`; the connection closes',
    detail: 'the request was not received in time',
  },
  body_too_large: {
    when: 'a body over `limits.max_body_bytes`, or any body on a request with a READ key (GET and HEAD carry none)',
    detail: 'the request body is larger than 1048576 bytes',
  },
  headers_too_large: {
    when: 'headers over `limits.max_header_bytes` or `max_header_count`',
    detail: 'the request headers are larger than allowed',
  },
  rate_limited: {
    when: 'a `rate_limits` policy has no request left for this key, client address or lead; with `Retry-After` and the `RateLimit` fields',
    detail: 'rate limit "storefront" reached: retry later',
  },
  internal_error: {
    when: 'a bug: logged with the request id; the gateway serves on',
    detail: 'the gateway failed to serve this request',
  },
  upstream_unavailable: {
    when: "the upstream (or the lead backend) refused, reset, or answered unusably; once its answer has started, the client's answer is cut instead (see below)",
    detail: 'the upstream is unavailable (ECONNREFUSED)',
  },
  shutting_down: {
    when: 'a request on an open connection after the listener closed during a drain',
    detail: 'the gateway is shutting down',
  },
  store_unavailable: {
    when: 'the shared state store (Redis) cannot answer where the config fails closed (`digest.on_store_error: deny`, `rate_limits.on_store_error: deny`); with `Retry-After: 1`',
    detail: 'single use of lead digests cannot be checked right now: retry in a second',
  },
  upstream_timeout: {
    when: "no upstream response headers within `upstream.timeout_ms` once the request body was sent, an upstream that took none of the body for that long, or (cut, see below) sent none of its answer's body for that long",
    detail: 'the upstream did not answer in time',
  },
};

/** docs/reference/errors.md: the catalogue with one example answer each. */
export function errorsMarkdown(): string {
  const codes = Object.keys(CATALOGUE) as ErrorCode[];
  const table = codes.map((c) => `| ${CATALOGUE[c].status} | [\`${c}\`](#${c}) | ${ERROR_DOCS[c].when} |`);
  const examples = codes.map((c) => {
    const e = new GatewayError(c, ERROR_DOCS[c].detail);
    const body = JSON.stringify(
      {
        type: 'about:blank',
        title: e.title,
        status: e.status,
        code: c,
        detail: e.detail,
        request_id: '0b8e4f1c-8d0e-4d2a-9a57-3c1f5e2b7a90',
      },
      null,
      2,
    );
    return `### ${c}\n\n\`\`\`http\nHTTP/1.1 ${e.status} ${e.title}\ncontent-type: application/problem+json\ncache-control: no-store\n\n${body}\n\`\`\`\n`;
  });
  return `# Errors

Every answer leadgate gives instead of the upstream's is \`application/problem+json\` (RFC 9457)
with \`type\`, \`title\`, \`status\`, \`code\`, \`detail\` and \`request_id\` (also sent as
\`x-request-id\`, and in the log line). The detail is a fixed sentence: it never echoes a header,
a key, a token or a digest. Clients should branch on \`code\`; a code, once shipped, keeps its
meaning. Generated from [src/contract/errors.ts](../../src/contract/errors.ts) by \`npm run schema\`; a test
keeps it in step.

| status | code | when |
|---|---|---|
${table.join('\n')}

Two outcomes have no answer of their own, only a line in the log and a count in
\`leadgate_requests_total\`: a client that left before its answer was whole is counted \`499\`
\`client_closed\`; an upstream that fails after its answer has started (it resets mid-body, or
sends no more of it for \`upstream.timeout_ms\` while the client reads) cannot be answered with a
problem any more, so the client's answer is cut (HTTP/1.1: the connection is reset, or closed
without TLS's close_notify; HTTP/2: the stream is reset with \`INTERNAL_ERROR\`) and the request is
counted \`502\` \`upstream_unavailable\` (or \`504\` \`upstream_timeout\`), which the shipped
\`LeadgateUpstreamErrors\` alert counts.

## One example each

${examples.join('\n')}`;
}
