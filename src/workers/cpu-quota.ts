import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';

/**
 * CPUs this container may use by its cgroup quota, rounded down (a pod limited to 1500m gets 1:
 * a second process would be throttled), or null when there is no quota. cgroup v2 `cpu.max`
 * ("max 100000" or "150000 100000"), else v1 `cpu.cfs_quota_us` / `cpu.cfs_period_us`.
 */
export function cgroupCpuQuota(root = '/sys/fs/cgroup'): number | null {
  const v2 = read(join(root, 'cpu.max'));
  if (v2 !== null) {
    const [quota, period] = v2.split(/\s+/);
    return ratio(quota, period);
  }
  for (const dir of ['cpu', 'cpu,cpuacct', 'cpuacct,cpu']) {
    const quota = read(join(root, dir, 'cpu.cfs_quota_us'));
    if (quota !== null) return ratio(quota, read(join(root, dir, 'cpu.cfs_period_us')) ?? undefined);
  }
  return null;
}

/** `workers`: a number as it is; `auto`: the cgroup quota, else the cores; never below 1. */
export function workerCount(
  setting: number | 'auto',
  facts: { readonly quota: number | null; readonly cores: number } = {
    quota: cgroupCpuQuota(process.env.LEADGATE_CGROUP_ROOT),
    cores: availableParallelism(),
  },
): number {
  if (setting !== 'auto') return setting;
  const cpus = facts.quota === null ? facts.cores : Math.min(facts.quota, facts.cores);
  return Math.max(1, cpus);
}

function ratio(quota: string | undefined, period: string | undefined): number | null {
  const q = Number(quota);
  const p = Number(period);
  if (quota === 'max' || !Number.isFinite(q) || q <= 0 || !Number.isFinite(p) || p <= 0) return null;
  return Math.max(1, Math.floor(q / p));
}

function read(file: string): string | null {
  try {
    return readFileSync(file, 'utf8').trim();
  } catch {
    return null;
  }
}
