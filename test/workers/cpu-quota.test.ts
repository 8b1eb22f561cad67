import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cgroupCpuQuota, workerCount } from '../../src/workers/cpu-quota.js';

/** A cgroup folder as the kernel shows it, with the given files. */
function cgroup(files: Record<string, string>): string {
  const root = mkdtempSync(join(tmpdir(), 'leadgate-cgroup-'));
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(join(root, name, '..'), { recursive: true });
    writeFileSync(join(root, name), `${text}\n`);
  }
  return root;
}

describe('the cgroup CPU quota', () => {
  it('reads cgroup v2 cpu.max, rounding down, and "max" as no quota', () => {
    expect(cgroupCpuQuota(cgroup({ 'cpu.max': '200000 100000' }))).toBe(2);
    expect(cgroupCpuQuota(cgroup({ 'cpu.max': '150000 100000' }))).toBe(1);
    expect(cgroupCpuQuota(cgroup({ 'cpu.max': '50000 100000' }))).toBe(1);
    expect(cgroupCpuQuota(cgroup({ 'cpu.max': 'max 100000' }))).toBeNull();
  });

  it('reads cgroup v1 cfs_quota_us / cfs_period_us, -1 as no quota', () => {
    const v1 = (quota: string) =>
      cgroup({ 'cpu,cpuacct/cpu.cfs_quota_us': quota, 'cpu,cpuacct/cpu.cfs_period_us': '100000' });
    expect(cgroupCpuQuota(v1('400000'))).toBe(4);
    expect(cgroupCpuQuota(v1('-1'))).toBeNull();
    expect(cgroupCpuQuota(cgroup({}))).toBeNull();
  });

  it('sizes workers: a number as given; auto from the quota, else the cores, at least 1', () => {
    expect(workerCount(3, { quota: 1, cores: 8 })).toBe(3);
    expect(workerCount('auto', { quota: 2, cores: 8 })).toBe(2);
    expect(workerCount('auto', { quota: null, cores: 8 })).toBe(8);
    expect(workerCount('auto', { quota: 16, cores: 4 })).toBe(4);
    expect(workerCount('auto', { quota: null, cores: 0 })).toBe(1);
  });
});
