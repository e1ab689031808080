import { readdirSync, readFileSync } from 'node:fs';

/**
 * On-CPU time a process has used so far, in µs: the sum over its threads of the scheduler's run time
 * (`/proc/<pid>/task/<tid>/schedstat`, nanoseconds, user and system alike), so a few hundred requests
 * resolve to the microsecond, with every thread counted (Node's libuv pool and GC helpers too).
 * Where schedstat is missing, `/proc/<pid>/stat` utime + stime (10 ms ticks, dead threads included).
 */
export function cpuMicros(pid: number): number {
  try {
    let ns = 0;
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      ns += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
    }
    if (Number.isFinite(ns) && ns > 0) return ns / 1e3;
  } catch {
    // No schedstat (or the process is gone): the ticks below, or NaN.
  }
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /, '').split(' ');
    return ((Number(fields[11]) + Number(fields[12])) / 100) * 1e6;
  } catch {
    return NaN;
  }
}
