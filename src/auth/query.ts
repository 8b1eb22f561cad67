/**
 * What a query string says of one parameter. Values are decoded as form data (`+` is a space) and
 * strictly as UTF-8: bytes that do not decode are a doubt, never replaced by U+FFFD.
 */
export type QueryParam =
  | { readonly kind: 'absent' }
  | { readonly kind: 'one'; readonly value: string }
  | { readonly kind: 'invalid'; readonly why: 'repeated' | 'empty' | 'undecodable' };

const ABSENT: QueryParam = Object.freeze({ kind: 'absent' });

export function queryParam(query: string, name: string): QueryParam {
  if (query === '' || !query.includes(name)) return ABSENT;
  let found: string | null = null;
  let count = 0;
  for (const pair of query.split('&')) {
    const eq = pair.indexOf('=');
    const rawName = eq === -1 ? pair : pair.slice(0, eq);
    const decodedName = decodeForm(rawName);
    if (decodedName !== name) continue;
    count++;
    found = eq === -1 ? '' : pair.slice(eq + 1);
  }
  if (found === null) return ABSENT;
  if (count > 1) return { kind: 'invalid', why: 'repeated' };
  const value = decodeForm(found);
  if (value === null) return { kind: 'invalid', why: 'undecodable' };
  if (value === '') return { kind: 'invalid', why: 'empty' };
  return { kind: 'one', value };
}

function decodeForm(raw: string): string | null {
  try {
    return decodeURIComponent(raw.replace(/\+/g, ' '));
  } catch {
    return null;
  }
}
