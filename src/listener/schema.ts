import { resolve } from 'node:path';
import { z } from 'zod';
import { checkedRange, createIpMatcher, parseRange } from '../net/ip.js';
import type { ListenerSettings, ProxyProtocolSettings, TlsSettings } from './settings.js';

/** `tls:` and `proxy_protocol:` on a listener (CONTRACT §11): the zod fragments and their meanings. */

const file = z.string().min(1);
const ipRange = z.string().superRefine((text, ctx) => {
  const range = parseRange(text);
  if (typeof range === 'string') ctx.addIssue({ code: 'custom', message: range });
});

export const tlsSchema = z.strictObject({
  cert_file: file,
  key_file: file,
  client_ca_file: file.optional(),
  min_version: z.enum(['TLSv1.2', 'TLSv1.3']).default('TLSv1.2'),
  http2: z.boolean().default(true),
});

export const proxyProtocolSchema = z.strictObject({
  from: z.array(ipRange).min(1, 'list the balancers whose PROXY headers are believed'),
  header_timeout_ms: z.number().int().positive().max(60_000).default(3000),
});

/** A listener's address and its optional blocks; `admin` has no `proxy_protocol`. */
export const listenerSchema = (defaultPort: number | null) =>
  z.strictObject({
    host: z.string().min(1).default('0.0.0.0'),
    port:
      defaultPort === null
        ? z.number().int().min(0).max(65535)
        : z.number().int().min(0).max(65535).default(defaultPort),
    tls: tlsSchema.optional(),
    proxy_protocol: proxyProtocolSchema.optional(),
  });

export const adminListenerSchema = z.strictObject({
  host: z.string().min(1).default('0.0.0.0'),
  port: z.number().int().min(0).max(65535).default(9090),
  tls: tlsSchema.optional(),
});

type RawTls = z.infer<typeof tlsSchema>;
type RawProxyProtocol = z.infer<typeof proxyProtocolSchema>;

/** One listener block as validated → as the config keeps it; files resolved against `base`. */
export function listenerSettingsOf(
  raw: { host: string; port: number; tls?: RawTls; proxy_protocol?: RawProxyProtocol },
  base: string,
): ListenerSettings {
  return {
    host: raw.host,
    port: raw.port,
    tls: raw.tls === undefined ? null : tlsSettingsOf(raw.tls, base),
    proxyProtocol: raw.proxy_protocol === undefined ? null : proxyProtocolOf(raw.proxy_protocol),
  };
}

function tlsSettingsOf(raw: RawTls, base: string): TlsSettings {
  return {
    certFile: resolve(base, raw.cert_file),
    keyFile: resolve(base, raw.key_file),
    clientCaFile: raw.client_ca_file === undefined ? null : resolve(base, raw.client_ca_file),
    minVersion: raw.min_version,
    http2: raw.http2,
  };
}

function proxyProtocolOf(raw: RawProxyProtocol): ProxyProtocolSettings {
  return {
    from: createIpMatcher(raw.from.map(checkedRange)),
    fromText: raw.from,
    headerTimeoutMs: raw.header_timeout_ms,
  };
}

const tlsMeaning = (at: string): Record<string, string> => ({
  [`${at}.tls`]: 'HTTPS on this listener (CONTRACT §11); the files are read again when they change',
  [`${at}.tls.cert_file`]: 'PEM certificate, leaf first then intermediates (relative to the config file)',
  [`${at}.tls.key_file`]: 'PEM private key of that certificate',
  [`${at}.tls.client_ca_file`]:
    'PEM CA: when set, a client certificate that chains to it is required (mutual TLS)',
  [`${at}.tls.min_version`]: '`TLSv1.2` (default) or `TLSv1.3`',
  [`${at}.tls.http2`]: 'offer h2 by ALPN beside http/1.1 (default true); false: http/1.1 only',
});

const proxyMeaning = (at: string): Record<string, string> => ({
  [`${at}.proxy_protocol`]:
    'accept a PROXY protocol v1/v2 header from L4 balancers; its source address becomes the peer',
  [`${at}.proxy_protocol.from`]:
    "addresses or CIDR ranges of the balancers whose PROXY headers are believed; another peer's header closes the connection",
  [`${at}.proxy_protocol.header_timeout_ms`]:
    'the PROXY header must be complete within this (default 3000), else the connection is closed',
});

/** What each listener field means, for `leadgate docs` and docs/reference/config.md. */
export const listenerMeanings: Readonly<Record<string, string>> = {
  ...tlsMeaning('listen'),
  ...proxyMeaning('listen'),
  ...tlsMeaning('forward_auth.listen'),
  ...proxyMeaning('forward_auth.listen'),
  ...tlsMeaning('admin'),
};
