/**
 * The Node lines leadgate supports: package.json's `engines` (a test keeps the two in step). On
 * any other line the binary still runs, and says once, on stderr, that it is unsupported.
 */
export const SUPPORTED_NODE = '>=22.19';

const [MIN_MAJOR, MIN_MINOR] = [22, 19];

/** True when `version` (`process.versions.node`, e.g. "20.20.2") satisfies `SUPPORTED_NODE`. */
export function isSupportedNode(version: string): boolean {
  const [major = 0, minor = 0] = version.split('.').map(Number);
  return major > MIN_MAJOR || (major === MIN_MAJOR && minor >= MIN_MINOR);
}

/** The one warning line, or null on a supported line. */
export function nodeLineWarning(version: string = process.versions.node): string | null {
  if (isSupportedNode(version)) return null;
  const eol = version.split('.')[0] === '20' ? '; Node 20 is past its end of life since 2026-04-30' : '';
  return `leadgate: warning: Node ${version} is not supported (engines: node ${SUPPORTED_NODE})${eol}: run leadgate on Node 22 or 26\n`;
}
