import { readFileSync, writeFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ask } from '../helpers/client.js';
import { writeConfig } from '../helpers/fixture.js';
import { startTestGateway } from '../helpers/gateway.js';
import { type RecordingUpstream, startRecordingUpstream } from '../helpers/upstream.js';

/** Issue 10: reloads off the event loop, with feedback an operator can trust. */
describe('config reloads', () => {
  let upstream: RecordingUpstream;
  let gw: Awaited<ReturnType<typeof startTestGateway>>;
  let path: string;
  let original: string;

  beforeAll(async () => {
    upstream = await startRecordingUpstream();
    path = writeConfig({ upstream: upstream.url });
    original = readFileSync(path, 'utf8');
    gw = await startTestGateway(path);
  });
  afterAll(async () => {
    await gw.close();
    await upstream.close();
  });

  const metric = async (series: string) => {
    const text = (await ask(gw.adminPort, { path: '/metrics' })).text;
    const line = text.split('\n').find((l) => l.startsWith(`${series} `));
    return line === undefined ? undefined : Number(line.split(' ')[1]);
  };
  const reloadLines = () =>
    gw.logs.lines
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .filter((l) => typeof l.cause === 'string');
  const addKey = (text: string, name: string) =>
    `${text}  - { name: ${name}, key: "sk_${name}_0123456789abcdef", access_type: WRITE, signing_secret: "0123456789abcdef0123456789abcdef" }\n`;

  it('has every result counter at 0 from the start, and the duration histogram', async () => {
    for (const result of ['ok', 'unchanged', 'failed']) {
      expect(await metric(`leadgate_config_reloads_total{result="${result}"}`)).toBe(0);
    }
    const text = (await ask(gw.adminPort, { path: '/metrics' })).text;
    expect(text).toContain('# TYPE leadgate_config_reload_duration_seconds histogram');
  });

  it('does not parse identical content again, and logs one line per attempt', async () => {
    expect(await gw.reload('sighup')).toBe('unchanged');
    expect(reloadLines().at(-1)).toMatchObject({
      cause: 'sighup',
      result: 'unchanged',
      msg: 'config unchanged',
    });
    expect(typeof reloadLines().at(-1)?.duration_ms).toBe('number');
    expect(await metric('leadgate_config_reloads_total{result="unchanged"}')).toBe(1);
  });

  it('counts one broken edit once as failed, however often it is triggered, then logs the recovery', async () => {
    writeFileSync(path, `${original}\nlisten: { port: 1 }\n`);
    expect(await gw.reload('file')).toBe('failed');
    expect(await gw.reload('sighup')).toBe('unchanged');
    expect(await metric('leadgate_config_reloads_total{result="failed"}')).toBe(1);
    const refused = reloadLines().find((l) => l.result === 'failed');
    expect(refused).toMatchObject({ cause: 'file', level: 'error' });
    const problems = (refused?.problems ?? []) as string[];
    expect(String(problems[0])).toMatch(/gateway\.yaml:\d+: YAML syntax: duplicated mapping key/);

    writeFileSync(path, addKey(original, 'fresh'));
    expect(await gw.reload('file')).toBe('ok');
    expect(reloadLines().at(-1)).toMatchObject({
      cause: 'file',
      result: 'ok',
      recovered: true,
      msg: 'config reloaded',
    });
    expect(gw.config().keys.size).toBe(5);
  });

  it('coalesces reloads that arrive while one runs into one more', async () => {
    const before = reloadLines().length;
    writeFileSync(path, addKey(addKey(original, 'fresh'), 'second'));
    const results = await Promise.all([1, 2, 3, 4, 5].map(() => gw.reload('sighup')));
    expect(results[0]).toBe('ok');
    // The four that arrived during the first share one more attempt, which finds nothing new.
    expect(new Set(results.slice(1))).toEqual(new Set(['unchanged']));
    expect(reloadLines().length - before).toBe(2);
    expect(gw.config().keys.size).toBe(6);
  });
});
