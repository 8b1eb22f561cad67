import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { makePki, sClient } from '../helpers/certs.js';
import { configBlocksRunBy } from '../helpers/doc-blocks.js';
import { keysYaml } from '../helpers/fixture.js';
import { startTestGateway } from '../helpers/gateway.js';
import { raw } from '../helpers/raw.js';

/**
 * The config blocks of docs/guides/tls.md and docs/guides/proxy-protocol.md marked
 * `<!-- run: test/listener/guides.test.ts -->`, run by a real leadgate as written: only the
 * address (127.0.0.1, a free port) and the certificate folder are this machine's.
 */
const blocks = (page: string) => configBlocksRunBy(page, 'test/listener/guides.test.ts');

function configWith(listen: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'leadgate-guide-'));
  const file = join(dir, 'gateway.yaml');
  writeFileSync(
    file,
    `${listen}admin: { host: 127.0.0.1, port: 0 }\nupstream: { url: "http://127.0.0.1:9" }\nshutdown: { delay_s: 0, timeout_s: 1 }\n${keysYaml()}`,
  );
  return file;
}
const local = (yaml: string) =>
  yaml.replace('host: 0.0.0.0', 'host: 127.0.0.1').replace(/port: \d+/, 'port: 0');

describe('docs/guides: the config blocks work as written', () => {
  it('tls.md: the tls block serves TLS with h2 offered', async () => {
    const [block] = blocks('docs/guides/tls.md');
    expect(block).toBeDefined();
    const pki = makePki();
    const pair = pki.server('guide');
    const dir = mkdtempSync(join(tmpdir(), 'leadgate-guide-tls-'));
    writeFileSync(join(dir, 'tls.crt'), readFileSync(pair.cert));
    writeFileSync(join(dir, 'tls.key'), readFileSync(pair.key));
    const gw = await startTestGateway(
      configWith(local(block?.text ?? '').replaceAll('/run/secrets/leadgate-tls/', `${dir}/`)),
    );
    try {
      const out = (await sClient(gw.apiPort, ['-CAfile', pki.caCert, '-alpn', 'h2,http/1.1'])).out;
      expect(out).toContain('ALPN protocol: h2');
      expect(out).toContain('Verify return code: 0 (ok)');
    } finally {
      await gw.close();
    }
  });

  it('proxy-protocol.md: the block believes only its `from` range', async () => {
    const [block] = blocks('docs/guides/proxy-protocol.md');
    expect(block).toBeDefined();
    const gw = await startTestGateway(configWith(local(block?.text ?? '')));
    try {
      // 127.0.0.1 is not in 10.0.0.0/16: its header is refused, a plain request served
      const request = 'GET /api/v2/merchant/orders HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n';
      const refused = await raw(gw.apiPort, ['PROXY TCP4 10.0.0.9 10.0.0.1 1 2\r\n', request]);
      expect(refused.text).toBe('');
      expect((await raw(gw.apiPort, [request])).text).toMatch(/^HTTP\/1\.1 401 /);
    } finally {
      await gw.close();
    }
  });
});
