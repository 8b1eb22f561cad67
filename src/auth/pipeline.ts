import type { IncomingHttpHeaders } from 'node:http';
import type { ApiKey, Config } from '../config/types.js';
import { GatewayError } from '../contract/errors.js';
import type { RevocationCheck } from '../revocation/index.js';
import { checkAccess } from './access.js';
import { createApiKeyCheck } from './api-key.js';
import { checkOriginIp } from './client-ip.js';
import type { RequestFacts } from './facts.js';
import { overrideMethods } from './header-names.js';
import { createLeadDigestVerifier } from './lead-digest.js';
import { createLeadTokenVerifier } from './lead-token.js';
import { routePath } from './path.js';
import { queryParam } from './query.js';
import { checkSource } from './source.js';

/** How the request proved which lead it is about. */
export type LeadProof =
  | { readonly via: 'token'; readonly leadId: string; readonly exp: number }
  | {
      readonly via: 'digest';
      readonly customerId: string;
      /** The digest as sent, for its single use (admission/single-use.ts); never logged. */
      readonly digest: string;
      /** Its `x-timestamp` (unix seconds): a store that began after it cannot vouch for its single use. */
      readonly stampedS: number;
      /** Set when a lead token came along too: the lookup checks that both name one lead. */
      readonly tokenLeadId: string | null;
    };

/** Who is calling, once every check passed. */
export interface Principal {
  readonly key: ApiKey;
  readonly path: string;
  readonly query: string;
  /** `:id` of `GET /api/v2/merchant/leads/:id`, or null for a request to forward. */
  readonly lookupId: string | null;
  /** Null when no lead credential was presented (only for keys that need none). */
  readonly lead: LeadProof | null;
}

/**
 * The pipeline's answer: who is calling, or why not; never both, never neither. `key` is the key
 * once known, also on refusals: for logs and metrics.
 */
export type PipelineResult =
  | { readonly principal: Principal; readonly error: null; readonly key: ApiKey }
  | { readonly principal: null; readonly error: GatewayError; readonly key: ApiKey | null };

const header = (headers: IncomingHttpHeaders, name: string): string | string[] | undefined => headers[name];

/**
 * CONTRACT §3: the checks, in the contract's order; the first that fails answers. Built once per
 * config; the returned function only reads, the revocations (§9) included: a set in memory.
 */
export function createPipeline(config: Config, revocations: RevocationCheck) {
  const checkApiKey = createApiKeyCheck(config.keys);
  const verifyToken = createLeadTokenVerifier(config.leadToken);
  const verifyDigest = createLeadDigestVerifier({ maxSkewS: config.digest.maxSkewS });

  const refuse = (error: GatewayError, key: ApiKey | null = null): PipelineResult => ({
    principal: null,
    error,
    key,
  });

  return function authenticate(facts: RequestFacts): PipelineResult {
    // 1. path
    const route = routePath(facts.url);
    if (route instanceof GatewayError) return refuse(route);

    // 2. API key
    const key = checkApiKey(header(facts.headers, 'x-apikey'));
    if (key instanceof GatewayError) return refuse(key);
    if (revocations.isKeyRevoked(key.name)) {
      return refuse(new GatewayError('revoked_api_key', 'the API key has been revoked'), key);
    }
    if (key.expiresAtS !== null && facts.nowS >= key.expiresAtS) {
      return refuse(new GatewayError('expired_api_key', 'the API key has expired'), key);
    }

    // 3. origin IP (the client address is only worked out for keys that have origin_ips)
    if (key.origins !== null) {
      const ipError = checkOriginIp(key, facts.clientAddress());
      if (ipError) return refuse(ipError, key);
    }

    // 4. source
    const sourceError = checkSource(header(facts.headers, 'x-source'));
    if (sourceError) return refuse(sourceError, key);

    // 5. access type × method
    const overrides = key.access === 'READ' ? overrideMethods(facts.headers) : [];
    const accessError = checkAccess(key, facts.method, overrides);
    if (accessError) return refuse(accessError, key);

    // 6. lead credential: a present credential is always verified
    const isLookup = route.lookupId !== null && (facts.method === 'GET' || facts.method === 'HEAD');
    const token = header(facts.headers, 'x-leadtoken');
    const digest = header(facts.headers, 'x-leaddigest');
    let lead: LeadProof | null = null;

    if (digest !== undefined) {
      if (!isLookup) {
        return refuse(
          new GatewayError('digest_not_accepted', 'x-leaddigest is accepted only on the lead lookup'),
          key,
        );
      }
      if (typeof digest !== 'string')
        return refuse(new GatewayError('invalid_digest', 'send one x-leaddigest'), key);
      const customer = queryParam(route.query, 'customer_id');
      const customerId = customer.kind === 'one' ? customer.value : null;
      const digestError = verifyDigest(
        key,
        { digest, timestamp: header(facts.headers, 'x-timestamp'), customerId },
        facts.nowS,
      );
      if (digestError) return refuse(digestError, key);
      const stampedS = Number(header(facts.headers, 'x-timestamp'));
      lead = { via: 'digest', customerId: customerId ?? '', digest, stampedS, tokenLeadId: null };
    }
    if (token !== undefined) {
      if (typeof token !== 'string' || token === '') {
        return refuse(new GatewayError('invalid_lead_token', 'send one x-leadtoken'), key);
      }
      const verified = verifyToken(key, token, facts.nowS);
      if (verified instanceof GatewayError) return refuse(verified, key);
      if (revocations.isLeadTokenRevoked(verified.leadId, verified.iat, facts.nowS)) {
        return refuse(
          new GatewayError('revoked_lead_token', "the lead's tokens issued until now have been revoked"),
          key,
        );
      }
      // Both credentials given: both were verified; the lookup checks that they name one lead.
      lead =
        lead === null
          ? { via: 'token', leadId: verified.leadId, exp: verified.exp }
          : { ...lead, tokenLeadId: verified.leadId };
    }
    if (lead === null && key.needsLead) {
      return refuse(
        new GatewayError(
          'missing_lead_credential',
          'a READ STOREFRONT key needs x-leadtoken (or x-leaddigest on the lookup)',
        ),
        key,
      );
    }
    return {
      principal: {
        key,
        path: route.path,
        query: route.query,
        lookupId: isLookup ? route.lookupId : null,
        lead,
      },
      error: null,
      key,
    };
  };
}
