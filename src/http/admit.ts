import { type Admitted, NO_HEADERS } from '../admission/index.js';
import type { Principal } from '../auth/pipeline.js';
import type { CorsHeaders } from '../cors/cors.js';
import type { Exchange } from './exchange.js';
import type { Judged } from './phase.js';

/**
 * The step after §3 (single use, rate limits): `proceed` with the headers it adds, or the refusal
 * with `base` and those headers. At once when the state store is in this process.
 */
export function admit(
  ex: Exchange,
  judged: Judged,
  principal: Principal,
  base: CorsHeaders,
  proceed: (added: CorsHeaders) => void,
): void {
  const check = ex.generation.admit;
  const admitted = check === null ? null : check(principal, judged.facts);
  if (admitted === null) proceed(NO_HEADERS);
  else if (!(admitted instanceof Promise)) settle(ex, admitted, base, proceed);
  else admitted.then((a) => settle(ex, a, base, proceed)).catch((err: unknown) => ex.unexpected(err));
}

function settle(ex: Exchange, a: Admitted, base: CorsHeaders, proceed: (added: CorsHeaders) => void): void {
  if (ex.answered) return;
  if (a.error === null) proceed(a.headers);
  else ex.refuse(a.error, a.headers === NO_HEADERS ? base : { ...base, ...a.headers });
}
