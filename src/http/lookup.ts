import { signLeadToken } from '../auth/lead-token.js';
import type { Principal } from '../auth/pipeline.js';
import { queryParam } from '../auth/query.js';
import type { Lead } from '../config/types.js';
import { GatewayError } from '../contract/errors.js';
import type { LeadResolver, LookupContext } from '../leads/resolver.js';

export interface LookupAnswer {
  readonly lead_token: string;
  readonly expires_in: number;
  readonly lead: Lead;
}

/**
 * CONTRACT §4: `GET /api/v2/merchant/leads/:id`, answered by the gateway. The lead is found by the
 * digest's customer_id, else by the token's lead_id, else (keys that need no lead credential) by
 * the `customer_id` query parameter or `:id`. A token minted from a token never outlives it.
 */
export async function answerLookup(
  principal: Principal,
  resolver: LeadResolver,
  ctx: LookupContext,
  ttlS: number,
  nowS: number,
): Promise<LookupAnswer | GatewayError> {
  const proof = principal.lead;
  let lead: Lead | null;
  let capExp: number | undefined;
  if (proof?.via === 'digest') {
    lead = await resolver.byCustomerId(proof.customerId, ctx);
    if (lead && proof.tokenLeadId !== null && lead._id !== proof.tokenLeadId) {
      return new GatewayError('invalid_lead_token', 'the lead token and the digest name different leads');
    }
  } else if (proof?.via === 'token') {
    lead = await resolver.byId(proof.leadId, ctx);
    capExp = proof.exp;
  } else {
    const customer = queryParam(principal.query, 'customer_id');
    if (customer.kind === 'invalid') {
      return new GatewayError(
        'missing_customer_id',
        'customer_id must be given once, non-empty and percent-encoded UTF-8',
      );
    }
    lead =
      customer.kind === 'one'
        ? await resolver.byCustomerId(customer.value, ctx)
        : await resolver.byId(principal.lookupId ?? '', ctx);
  }
  if (lead === null) return new GatewayError('lead_not_found', 'no lead matches');
  const { token, exp } = signLeadToken(principal.key.secret, lead._id, nowS, ttlS, capExp, principal.key.kid);
  return { lead_token: token, expires_in: exp - nowS, lead };
}
