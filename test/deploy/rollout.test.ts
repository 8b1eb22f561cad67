import { readFileSync, writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { writeConfig } from '../helpers/fixture.js';
import { playTermination, type Termination } from '../helpers/rollout.js';

/**
 * A pod replaced under steady keep-alive load (CONTRACT §10 "Rollouts"): the kubelet's
 * termination sequence played with real processes, with the timings of the shipped manifests
 * scaled down 5 times (10 s -> 2 s) so the test stays short. The endpoint removal is taken to
 * reach every client 5 s after the deletion (1 s here): that is what the manifests' figures are
 * twice of. The app exits at once on SIGTERM, in flight or not.
 */
const DIR = new URL('../../deploy/kubernetes/', import.meta.url);
const SCALE = 5;
const PROPAGATION_S = 5;

const read = (file: string) => readFileSync(new URL(file, DIR), 'utf8');
const delayOf = (configMap: string) => {
  const cm = parseAllDocuments(configMap)[0]?.toJS() as { data: Record<string, string> };
  return (parse(cm.data['gateway.yaml'] ?? '') as { shutdown: { delay_s: number } }).shutdown.delay_s;
};

/** The shipped timings, in seconds: the app's preStop and leadgate's shutdown.delay_s. */
const shipped = {
  native: {
    preStop: (
      parse(read('deployment.yaml')) as {
        spec: {
          template: {
            spec: { containers: Array<{ lifecycle: { preStop: { sleep: { seconds: number } } } }> };
          };
        };
      }
    ).spec.template.spec.containers[0]?.lifecycle.preStop.sleep.seconds,
    delay: delayOf(read('configmap.yaml')),
  },
  classic: {
    preStop: (
      parse(read('components/classic-sidecar/deployment.yaml')) as Array<{ path: string; value?: number }>
    ).find((op) => op.path.endsWith('/preStop/sleep/seconds'))?.value,
    delay: delayOf(read('components/classic-sidecar/gateway-config.yaml')),
  },
};

function scaled(mode: 'native' | 'classic', withPreStop = true): Termination {
  const t = shipped[mode];
  return {
    mode,
    appPreStopMs: withPreStop ? ((t.preStop ?? 0) * 1000) / SCALE : 0,
    delayS: t.delay / SCALE,
    propagationMs: (PROPAGATION_S * 1000) / SCALE,
  };
}

function play(t: Termination) {
  return playTermination(t, (upstream) => {
    const path = writeConfig({ upstream });
    writeFileSync(
      path,
      readFileSync(path, 'utf8').replace(
        'shutdown: { delay_s: 0, timeout_s: 2 }',
        `shutdown: { delay_s: ${t.delayS}, timeout_s: 5 }`,
      ),
    );
    return path;
  });
}

describe('a pod replaced under steady keep-alive load, the kubelet sequence played with real processes', () => {
  it('the shipped timings are whole seconds once scaled', () => {
    for (const mode of ['native', 'classic'] as const) {
      expect(Number.isInteger(scaled(mode).delayS), mode).toBe(true);
      expect(shipped[mode].preStop, mode).toBeGreaterThan(PROPAGATION_S);
    }
  });

  it.each(['native', 'classic'] as const)(
    '%s sidecar, as shipped: no request fails',
    { timeout: 60_000 },
    async (mode) => {
      const t = scaled(mode);
      const out = await play(t);
      report(mode, t, out);
      expect(out.sentAfterDeletion).toBeGreaterThan(0);
      expect(out.failures).toEqual({});
      expect(out.leadgateExit).toBe(0);
    },
  );

  it('classic sidecar without the app preStop: requests fail (the app is gone while leadgate still serves)', {
    timeout: 60_000,
  }, async () => {
    const t = scaled('classic', false);
    const out = await play(t);
    report('classic, no preStop', t, out);
    expect(out.failed).toBeGreaterThan(0);
  });
});

function report(what: string, t: Termination, out: Awaited<ReturnType<typeof playTermination>>): void {
  process.stdout.write(
    `rollout ${what}: preStop ${t.appPreStopMs} ms, delay_s ${t.delayS}, clients for ${t.propagationMs} ms: ` +
      `${out.failed} failed of ${out.sent} (${out.sentAfterDeletion} after the deletion; ${JSON.stringify(out.failures)}), ${out.reconnects} reconnects\n`,
  );
}
