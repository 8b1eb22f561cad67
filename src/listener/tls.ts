import { createPrivateKey, X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createSecureContext, type SecureContextOptions } from 'node:tls';
import type { TlsSettings } from './settings.js';

/** A certificate pair that loaded, matched and is in date: what a secure context is made of. */
export interface LoadedPair {
  readonly options: SecureContextOptions;
  /** The leaf's notAfter, in unix seconds. */
  readonly expiresAt: number;
}

/** Why a pair was refused: the file at fault and one line, never key material. */
export interface PairProblem {
  readonly file: string;
  readonly field: 'cert_file' | 'key_file' | 'client_ca_file';
  readonly message: string;
}

/** A certificate expiring within this many days: `leadgate check` warns. */
export const EXPIRY_WARNING_DAYS = 14;

/**
 * Reads the PEM files of `tls` and checks them as a listener would serve them: the certificate
 * parses, the key parses and is the certificate's, the certificate is in date at `nowS`, the
 * client CA (if any) parses. Node's own parsers throughout; their messages name no key bytes.
 */
export function loadPair(tls: TlsSettings, nowS: number): LoadedPair | PairProblem {
  const cert = read(tls.certFile, 'cert_file');
  if ('message' in cert) return cert;
  const key = read(tls.keyFile, 'key_file');
  if ('message' in key) return key;
  const ca = tls.clientCaFile === null ? null : read(tls.clientCaFile, 'client_ca_file');
  if (ca !== null && 'message' in ca) return ca;
  let leaf: X509Certificate;
  try {
    leaf = new X509Certificate(cert.bytes);
  } catch {
    return { file: tls.certFile, field: 'cert_file', message: 'not a PEM certificate' };
  }
  try {
    if (!leaf.checkPrivateKey(createPrivateKey(key.bytes))) {
      return { file: tls.keyFile, field: 'key_file', message: 'this key does not match the certificate' };
    }
  } catch {
    return { file: tls.keyFile, field: 'key_file', message: 'not a PEM private key (or it is encrypted)' };
  }
  const notBefore = Date.parse(leaf.validFrom) / 1000;
  const expiresAt = Math.floor(Date.parse(leaf.validTo) / 1000);
  if (expiresAt <= nowS) {
    return {
      file: tls.certFile,
      field: 'cert_file',
      message: `the certificate expired at ${leaf.validToDate.toISOString()}`,
    };
  }
  if (notBefore > nowS) {
    return {
      file: tls.certFile,
      field: 'cert_file',
      message: `the certificate is not valid before ${leaf.validFromDate.toISOString()}`,
    };
  }
  const options: SecureContextOptions = {
    cert: cert.bytes,
    key: key.bytes,
    minVersion: tls.minVersion,
    ...(ca === null ? {} : { ca: ca.bytes }),
  };
  try {
    createSecureContext(options);
  } catch (err) {
    const file = ca !== null && tls.clientCaFile !== null ? tls.clientCaFile : tls.certFile;
    const code = (err as NodeJS.ErrnoException).code ?? 'unusable';
    return {
      file,
      field: ca !== null ? 'client_ca_file' : 'cert_file',
      message: `not usable for TLS (${code})`,
    };
  }
  return { options, expiresAt };
}

/** The warning `leadgate check` gives, or null: the certificate expires within 14 days of `nowS`. */
export function certificateExpiryWarning(pair: LoadedPair, nowS: number): string | null {
  const days = (pair.expiresAt - nowS) / 86_400;
  if (days > EXPIRY_WARNING_DAYS) return null;
  return `the certificate expires in ${Math.max(0, Math.floor(days))} day(s), at ${new Date(pair.expiresAt * 1000).toISOString()}`;
}

function read(file: string, field: PairProblem['field']): { bytes: Buffer } | PairProblem {
  try {
    return { bytes: readFileSync(file) };
  } catch (err) {
    return { file, field, message: `cannot read: ${(err as NodeJS.ErrnoException).code ?? 'error'}` };
  }
}
