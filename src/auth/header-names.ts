import type { IncomingHttpHeaders } from 'node:http';

/**
 * Header names as a backend may read them (CONTRACT §10): CGI and PHP turn every character other
 * than a letter or digit into `_`, others fold case or ignore separators. Two names are one when
 * they are equal lower-cased with every character other than `a-z0-9` removed: `X.Lead.Id`,
 * `X~Lead~Id`, `X_Lead_Id` and `XLeadId` are all `x-lead-id`.
 */
export function foldName(name: string): string {
  return name.toLowerCase().replace(/[^a-z0-9]/g, '');
}

/** The headers leadgate sets for the backend (§5); a client's copy never passes. */
export const IDENTITY_HEADERS = [
  'x-lead-id',
  'x-api-key-name',
  'x-api-key-access',
  'x-api-key-purpose',
  'x-request-id',
] as const;
/** The credentials: read by leadgate under these exact names only, never sent on. */
export const CREDENTIAL_HEADERS = ['x-apikey', 'x-leadtoken', 'x-leaddigest'] as const;
/** Where a client claims its address or scheme: only leadgate (or a trusted proxy) says. */
export const FORWARDING_HEADERS = [
  'x-forwarded-for',
  'x-forwarded-proto',
  'x-forwarded-host',
  'x-forwarded-port',
  'x-real-ip',
  'forwarded',
];
/** Method overrides that backend frameworks honour: they name methods (§10). */
const OVERRIDE_HEADERS = ['x-http-method-override', 'x-http-method', 'x-method-override'];

export type NameKind = 'identity' | 'credential' | 'forwarding' | 'override';

const KINDS = new Map<string, NameKind>([
  ...IDENTITY_HEADERS.map((n) => [foldName(n), 'identity'] as const),
  ...CREDENTIAL_HEADERS.map((n) => [foldName(n), 'credential'] as const),
  ...FORWARDING_HEADERS.map((n) => [foldName(n), 'forwarding'] as const),
  ...OVERRIDE_HEADERS.map((n) => [foldName(n), 'override'] as const),
]);
/** First characters of the folded names: a name starting with another letter or digit is none. */
const FIRST = new Set([...KINDS.keys()].map((n) => n.charCodeAt(0)));
/** Names already classified; bounded in count and length, so clients sending new names cannot grow it. */
const seen = new Map<string, NameKind | null>();
const SEEN_MAX = 2048;
const SEEN_NAME_MAX = 64;

const isLowerAlnum = (c: number) => (c >= 0x61 && c <= 0x7a) || (c >= 0x30 && c <= 0x39);

/**
 * Which of the named headers `name` is a spelling of, or null. The hot path: most names
 * (`accept`, `host`, `user-agent`, ...) are settled by their first character; the others are
 * folded once and remembered.
 */
export function nameKind(name: string): NameKind | null {
  const c = name.charCodeAt(0);
  if (isLowerAlnum(c) && !FIRST.has(c)) return null;
  const known = seen.get(name);
  if (known !== undefined) return known;
  const kind = KINDS.get(foldName(name)) ?? null;
  if (seen.size < SEEN_MAX && name.length <= SEEN_NAME_MAX) seen.set(name, kind);
  return kind;
}

const NONE: readonly string[] = [];

/**
 * Every method the override headers name, in any spelling, repeated or as comma lists (as
 * backends upper-case them); empty when there are none.
 */
export function overrideMethods(headers: IncomingHttpHeaders): readonly string[] {
  const out: string[] = [];
  for (const name in headers) {
    if (nameKind(name) !== 'override') continue;
    const value = headers[name];
    for (const v of Array.isArray(value) ? value : [value ?? '']) {
      for (const m of v.split(',')) {
        const method = m.trim().toUpperCase();
        if (method !== '') out.push(method);
      }
    }
  }
  return out.length === 0 ? NONE : out;
}
