import type { ApiKey } from '../config/types.js';
import { GatewayError } from '../contract/errors.js';

const READ_METHODS = new Set(['GET', 'HEAD']);

/**
 * CONTRACT §3.5 and spec §2: READ keys fetch data, so only GET and HEAD. A CORS preflight is
 * answered before the pipeline; a plain OPTIONS is refused like any other method.
 */
export function checkAccess(key: ApiKey, method: string): GatewayError | null {
  if (key.access === 'WRITE' || READ_METHODS.has(method)) return null;
  return new GatewayError('method_not_allowed', `a READ key may not use ${method}`);
}
