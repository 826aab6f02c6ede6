// The machine the load generator ran on, and how busy it was: on a small box the server, Redis,
// MariaDB and the generator share the cores, so every recorded figure carries these.
import { readFileSync } from 'node:fs';
import os from 'node:os';
import { performance } from 'node:perf_hooks';

export interface MachineInfo {
  cpus: number;
  cpuModel: string;
  memoryGiB: number;
  node: string;
  platform: string;
}

export function machineInfo(): MachineInfo {
  return {
    cpus: os.availableParallelism(),
    cpuModel: os.cpus()[0]?.model.trim() ?? 'unknown',
    memoryGiB: Math.round(os.totalmem() / 2 ** 30),
    node: process.version,
    platform: `${os.platform()} ${os.release()}`,
  };
}

export interface CpuWindow {
  /** CPU µs (user + system) this process spent per request sent. */
  clientUsPerRequest: number;
  /** Cores busy machine-wide on average (every process: server, Redis, MariaDB, this one, others); null off Linux. */
  machineBusyCores: number | null;
  /** 1-minute load average at the end. */
  loadAverage1m: number;
}

const US_PER_TICK = 10_000; // USER_HZ = 100 on Linux

/** Busy CPU time of the whole machine in µs (/proc/stat: all but idle and iowait); null where there is none. */
export function machineBusyUs(): number | null {
  try {
    const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
    const [user = 0, nice = 0, system = 0, , , irq = 0, softirq = 0, steal = 0] = fields;
    return (user + nice + system + irq + softirq + steal) * US_PER_TICK;
  } catch {
    return null;
  }
}

/**
 * CPU time (user + system, µs) of process `pid` so far (/proc/<pid>/stat); 0 where there is none.
 * `withExitedChildren`: plus that of its children that exited and were waited for.
 */
export function processCpuUs(pid: number, { withExitedChildren = false } = {}): number {
  try {
    // Fields after the ")" of the command name: utime and stime are the 12th and 13th, the
    // children's cutime and cstime the 14th and 15th.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const children = withExitedChildren ? Number(fields[13]) + Number(fields[14]) : 0;
    return (Number(fields[11]) + Number(fields[12]) + children) * US_PER_TICK;
  } catch {
    return 0;
  }
}

/** Starts measuring; the returned function ends the window. */
export function measureCpu(): (requests: number) => CpuWindow {
  const self = process.cpuUsage();
  const machine = machineBusyUs();
  const at = performance.now();
  return (requests) => {
    const used = process.cpuUsage(self);
    const machineNow = machineBusyUs();
    const elapsedUs = (performance.now() - at) * 1000;
    return {
      clientUsPerRequest: requests ? (used.user + used.system) / requests : 0,
      machineBusyCores: machine === null || machineNow === null || elapsedUs <= 0 ? null : (machineNow - machine) / elapsedUs,
      loadAverage1m: os.loadavg()[0] ?? 0,
    };
  };
}
