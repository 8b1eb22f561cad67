import type { ApiKey } from '../config/types.js';
import { GatewayError } from '../contract/errors.js';

const READ_METHODS = new Set(['GET', 'HEAD']);

/**
 * CONTRACT §3.5, §10 and spec §2: READ keys fetch data, so only GET and HEAD — as the request's
 * method and as every method an override header names (backends honour those). A CORS preflight
 * is answered before the pipeline; a plain OPTIONS is refused like any other method.
 */
export function checkAccess(
  key: ApiKey,
  method: string,
  overrides: readonly string[] = [],
): GatewayError | null {
  if (key.access === 'WRITE') return null;
  if (!READ_METHODS.has(method))
    return new GatewayError('method_not_allowed', `a READ key may not use ${method}`);
  const named = overrides.find((m) => !READ_METHODS.has(m));
  return named === undefined
    ? null
    : new GatewayError('method_not_allowed', 'a READ key may not name another method in a method override');
}
