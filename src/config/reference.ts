import { leadsMeanings } from '../leads/schema.js';
import { listenerMeanings } from '../listener/schema.js';
import { rateLimitsMeanings } from '../ratelimit/schema.js';
import { storeMeanings } from '../store/schema.js';
import { tracingMeanings } from '../tracing/schema.js';
import { ENV_OVERRIDES } from './env-overrides.js';
import { configJsonSchema } from './json-schema.js';

interface SchemaNode {
  readonly type?: string;
  readonly properties?: Record<string, SchemaNode>;
  readonly items?: SchemaNode;
  readonly required?: readonly string[];
  readonly default?: unknown;
  readonly enum?: readonly unknown[];
  readonly pattern?: string;
  readonly minimum?: number;
  readonly exclusiveMinimum?: number;
  readonly maximum?: number;
  readonly anyOf?: readonly SchemaNode[];
  readonly const?: unknown;
}

/** What each field means: the one hand-written part of the reference (a test wants every field here). */
export const FIELD_MEANINGS: Readonly<Record<string, string>> = {
  'listen.host': 'address of the API listener (`0.0.0.0` in a container)',
  'listen.port': 'port of the API listener; 0 picks a free one',
  'admin.host': 'address of /healthz, /readyz and /metrics',
  'admin.port': 'port of the admin listener',
  'forward_auth.listen.host':
    'address of the forward-auth listener (nginx auth_request, Traefik ForwardAuth, Envoy ext_authz); off when absent',
  'forward_auth.listen.port': 'its port',
  ...listenerMeanings,
  ...tracingMeanings,
  workers:
    'processes serving the API (node:cluster): 1 (default), a number, or `auto` (the cgroup CPU quota, else the cores); a restart applies it',
  ...storeMeanings,
  'digest.on_store_error':
    '`deny` (503 `store_unavailable`, Retry-After 1) or `allow` (accepted, logged and counted) when the store cannot answer',
  ...rateLimitsMeanings,
  'upstream.url': 'the backend every valid request is forwarded to',
  'upstream.timeout_ms':
    'longest wait for the upstream response headers: then 504 `upstream_timeout`; once the answer has started, longest the upstream may send nothing of it while the client reads: then the answer is cut, counted 504 `upstream_timeout`',
  'upstream.connect_timeout_ms': 'connect timeout and idle socket timeout toward the upstream',
  'upstream.max_sockets': 'keep-alive connections to the upstream',
  'upstream.health_path': 'when set, /readyz is 503 while the upstream does not answer it with 2xx/3xx',
  'upstream.engine': 'forwarding engine: `undici` (default, cheaper) or `http-proxy`',
  'upstream.underscore_headers':
    'client headers whose name holds `_`: `drop` all (as nginx) or `pass`; reserved names are dropped either way',
  'client_ip.trusted_proxies':
    'CIDRs of proxies whose `X-Forwarded-For` is believed when finding the client address for `origin_ips`',
  'digest.max_skew_s': 'how far `x-timestamp` may be from the gateway clock',
  'digest.single_use': 'an accepted digest is refused on replay within its window (`replayed_digest`)',
  'lead_token.ttl_s': 'lifetime of minted tokens, and the longest lifetime (`exp − iat`) accepted',
  'lead_token.max_skew_s':
    "slack for the signer's clock on `iat`/`nbf` and the lifetime limit (never on `exp`)",
  'lead_token.cache_size': 'verified tokens kept until `exp`; 0 turns the cache off',
  ...leadsMeanings,
  'cors.origins': 'browser origins any key may be used from (exact `scheme://host[:port]`, never `*`)',
  'cors.max_age_s': '`Access-Control-Max-Age` of preflight answers',
  'shutdown.delay_s': 'after SIGTERM, keep serving this long while /readyz is 503 (endpoints catch up)',
  'shutdown.timeout_s': 'then wait this long for in-flight requests before closing the rest',
  'limits.max_header_bytes': 'request headers over this: 431 `headers_too_large`',
  'limits.max_header_count': 'more request headers than this: 431 `headers_too_large`',
  'limits.max_body_bytes': 'request bodies over this: 413 `body_too_large` (none: no limit)',
  'limits.header_timeout_ms':
    'all request headers must arrive within this (slowloris): 408; on TLS, the handshake too (else the connection is closed)',
  'limits.request_timeout_ms': 'the whole request must arrive within this: 408',
  'limits.keepalive_timeout_ms':
    'idle client keep-alive connections are closed after this (an h2 session gets GOAWAY)',
  'limits.max_pipelined_requests':
    'pipelined requests that may wait on one connection: then it is not read until half are answered',
  'limits.send_timeout_ms':
    'a connection not read for `max_pipelined_requests` on which no answer is written for this long (its client reads none) is closed; a forwarded answer its client takes nothing of for this long is cut with its upstream request; an h2 stream with no frame either way for this long is cancelled (not one whose answer has started with nothing waiting for the client: that wait is on the upstream: `upstream.timeout_ms`), and an h2 session whose streams have not finished this long after GOAWAY is destroyed',
  'limits.buffer_body_bytes':
    'a request body that ends within this is received whole before an upstream connection is taken (0: always stream)',
  'limits.min_body_rate_bps':
    'after `body_rate_grace_ms`, a request body must average this many bytes a second: else 408 `request_timeout` (0: no minimum)',
  'limits.body_rate_grace_ms': 'how long a request body may arrive slower than `min_body_rate_bps`',
  'limits.max_connections':
    'client connections one listener keeps open at once, in each process (each worker); more are closed on accept',
  'log.requests': 'which requests get a log line: `all`, `errors` (status ≥ 400) or `none`',
  'keys[]': 'the API keys; at least one',
  'keys[].name': 'unique name: in logs, metrics and `x-api-key-name`',
  'keys[].key': 'the key itself (usually from an environment variable); or give `key_sha256`',
  'keys[].key_sha256':
    'lowercase hex sha256 of the key (`leadgate hash-key`): the key itself is never stored',
  'keys[].access_type': '`READ` (GET, HEAD) or `WRITE` (any method)',
  'keys[].purpose': 'for READ keys: `STOREFRONT` (needs a lead credential) or `SERVER`',
  'keys[].signing_secret':
    'HMAC / HS256 secret for digests and lead tokens (usually from an environment variable)',
  'keys[].signing_secret_file': 'or read the secret from this file (a mounted Secret); reloads on change',
  'keys[].signing_secrets[]':
    'instead of signing_secret, for rotation: the first mints (its kid in the token header), every live one verifies',
  'keys[].signing_secrets[].kid': 'the key id, matched exactly against a token header `kid`',
  'keys[].signing_secrets[].secret': 'the secret (usually from an environment variable)',
  'keys[].signing_secrets[].secret_file': 'or read it from this file; reloads on change',
  'keys[].signing_secrets[].verify_until':
    'RFC 3339 time from which this secret verifies neither tokens nor digests (not on the first entry)',
  'keys[].origin_ips': 'when set, only these addresses or CIDRs may use the key (else 403)',
  'keys[].cors_origins': "narrows `cors.origins` for this key's requests",
  'keys[].expires_at':
    'RFC 3339 time after which the key is refused (401 `expired_api_key`); `check` warns 14 days ahead',
};

export interface FieldRow {
  readonly path: string;
  readonly type: string;
  readonly required: boolean;
  readonly defaultValue: string;
  readonly meaning: string;
}

/** Every field of the config, from the loader's own schema: type, required, default, allowed values. */
export function configFields(): FieldRow[] {
  const rows: FieldRow[] = [];
  const visit = (node: SchemaNode, path: string, required: boolean) => {
    if (node.type === 'object' && node.properties) {
      for (const [name, child] of Object.entries(node.properties))
        visit(child, path ? `${path}.${name}` : name, (node.required ?? []).includes(name));
      return;
    }
    const items = node.items;
    if (node.type === 'array' && items?.type === 'object') {
      rows.push(row(node, `${path}[]`, required));
      for (const [name, child] of Object.entries(items.properties ?? {}))
        visit(child, `${path}[].${name}`, (items.required ?? []).includes(name));
      return;
    }
    rows.push(row(node, path, required));
  };
  visit(configJsonSchema() as SchemaNode, '', true);
  return rows;
}

function row(node: SchemaNode, path: string, required: boolean): FieldRow {
  return {
    path,
    type: typeOf(node),
    required,
    defaultValue: node.default === undefined ? '' : `\`${JSON.stringify(node.default)}\``,
    meaning: FIELD_MEANINGS[path] ?? '',
  };
}

function typeOf(node: SchemaNode): string {
  if (node.anyOf) return node.anyOf.map(typeOf).join(' or ');
  if (node.const !== undefined) return `\`${String(node.const)}\``;
  if (node.enum) return node.enum.map((v) => `\`${String(v)}\``).join(' \\| ');
  if (node.type === 'array') return `list of ${node.items ? typeOf(node.items) : 'any'}`;
  if (node.type === 'integer') {
    const min = node.exclusiveMinimum !== undefined ? node.exclusiveMinimum + 1 : node.minimum;
    const max =
      node.maximum !== undefined && node.maximum < 1e9 ? `–${node.maximum}` : min !== undefined ? '+' : '';
    return min === undefined ? 'integer' : `integer ${min}${max}`;
  }
  return node.type ?? 'any';
}

/** docs/reference/config.md: `npm run schema` writes it with the JSON Schema; a test keeps it in step. */
export function configReferenceMarkdown(): string {
  const lines = configFields().map(
    (r) =>
      `| \`${r.path}\` | ${r.type} | ${r.required ? 'yes' : ''} | ${r.defaultValue} | ${r.meaning.replaceAll('|', '\\|')} |`,
  );
  return `# Config reference

Generated from the schema \`leadgate check\` and the gateway validate with (\`npm run schema\`
writes this file and [config/leadgate.schema.json](../../config/leadgate.schema.json); a test keeps
both in step). A value may be written as \`\${VAR}\` to read it from the environment. Fields not
required have the default shown, or are off when none is shown. Unknown fields are errors.
[config/gateway.yaml](../../config/gateway.yaml) is a working example.

| field | type | required | default | meaning |
|---|---|---|---|---|
${lines.join('\n')}

## From the environment

A deployment changes its ports and its upstream without copying the config, as with
oauth2-proxy's \`OAUTH2_PROXY_*\` or Kong's \`KONG_*\` variables: a set variable wins over the
file, in \`leadgate serve\`, \`leadgate check\` (which names the ones in effect) and \`npm start\`
alike. A value that is not a port is a config error naming the variable.

| variable | sets |
|---|---|
${ENV_OVERRIDES.map((o) => `| \`${o.variable}\` | \`${o.path.join('.')}\` |`).join('\n')}

\`\${VAR}\` substitutes text, so a numeric field written \`port: "\${PORT}"\` is refused as a
string: take ports from the environment with these variables.
`;
}
