import { API_PREFIX } from '../auth/path.js';

export const LOOKUP_ROUTE = `${API_PREFIX}leads/{id}`;
export const API_ROUTE = `${API_PREFIX}*`;

/**
 * `http.route` for a span: a template, never the raw path (ids and customer data stay out of
 * traces). The lookup has its own; any other path under the prefix is the API's; others have none.
 */
export function routeTemplate(isLookup: boolean, url: string | undefined): string | undefined {
  if (isLookup) return LOOKUP_ROUTE;
  return url?.startsWith(API_PREFIX) ? API_ROUTE : undefined;
}
