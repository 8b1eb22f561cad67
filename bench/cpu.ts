import { readdirSync, readFileSync } from 'node:fs';

/** Clock ticks per second of /proc/<pid>/stat's times (USER_HZ: 100 on every Linux port). */
const TICKS_PER_S = 100;

function ownCpuMicros(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Fields after the command name (which may hold spaces) start at the state, field 3.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const utime = Number(fields[11]);
  const stime = Number(fields[12]);
  return ((utime + stime) * 1e6) / TICKS_PER_S;
}

/** The children of `pid` (nginx's worker under its master), from every thread's list. */
function childrenOf(pid: number): number[] {
  const out: number[] = [];
  for (const task of readdirSync(`/proc/${pid}/task`)) {
    const text = readFileSync(`/proc/${pid}/task/${task}/children`, 'utf8').trim();
    if (text !== '') out.push(...text.split(' ').map(Number));
  }
  return out;
}

/**
 * CPU the process `pid` and its live children have used so far, user + system, all threads, in
 * microseconds: read from /proc, so nginx and the bare proxies are measured as leadgate is.
 */
export function cpuMicros(pid: number): number {
  return childrenOf(pid).reduce((sum, child) => sum + cpuMicros(child), ownCpuMicros(pid));
}
