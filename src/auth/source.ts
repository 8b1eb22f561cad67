import { GatewayError } from '../contract/errors.js';

/** CONTRACT §3.4 and spec §5.1: `x-source` is `web` or `mobile`. */
export function checkSource(header: string | string[] | undefined): GatewayError | null {
  if (header === undefined || header === '') {
    return new GatewayError('missing_source', 'the x-source header is required (web or mobile)');
  }
  if (header === 'web' || header === 'mobile') return null;
  return new GatewayError('invalid_source', 'the x-source header must be web or mobile');
}
