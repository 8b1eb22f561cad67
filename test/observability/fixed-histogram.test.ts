import { Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { FixedHistogram } from '../../src/observability/fixed-histogram.js';

describe('fixed histogram', () => {
  it('renders exactly what a prom-client histogram renders for the same observations', async () => {
    const buckets = [0.001, 0.01, 0.1, 1];
    const ours = new Registry();
    const theirs = new Registry();
    const fixed = new FixedHistogram('h_seconds', 'help', 'kind', ['a', 'b'], buckets, ours);
    const reference = new Histogram({
      name: 'h_seconds',
      help: 'help',
      labelNames: ['kind'],
      buckets,
      registers: [theirs],
    });
    reference.zero({ kind: 'a' });
    reference.zero({ kind: 'b' });
    const child = fixed.child('a');
    for (const v of [0, 0.0005, 0.001, 0.002, 0.5, 1, 3, 1e9]) {
      child.observe(v);
      reference.observe({ kind: 'a' }, v);
    }
    fixed.observe('b', 0.05);
    reference.observe({ kind: 'b' }, 0.05);
    expect(await ours.metrics()).toBe(await theirs.metrics());
    // the JSON the cluster aggregator merges, as it travels between processes
    const json = async (r: Registry) => JSON.parse(JSON.stringify(await r.getMetricsAsJSON())) as unknown;
    expect(await json(ours)).toEqual(await json(theirs));
  });

  it('refuses a label value it was not given', () => {
    const h = new FixedHistogram('x_seconds', 'help', 'kind', ['a'], [1], new Registry());
    expect(() => h.child('b' as 'a')).toThrow(/no series for kind="b"/);
  });
});
