/**
 * The processes a benchmark starts and reads on Node: real `mesh node` processes with extra
 * environment, and CPU time from /proc (one process) or os.cpus() (the whole machine), so that a
 * benchmark can say what its figures cost and whether the machine was busy with something else.
 */
import { readFile } from 'node:fs/promises';
import { cpus } from 'node:os';
import { type MeshProcess, type StartOptions, startNode } from '../../test/mesh-process.ts';

/** CPU time (user + system) of process `pid` in ms, from /proc; null when unreadable. */
export async function processCpuMs(pid: number | undefined): Promise<number | null> {
  if (pid === undefined) return null;
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    // The command name may hold spaces: the fields that follow it start after its closing parenthesis.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // utime and stime are fields 14 and 15 of the file, in clock ticks (USER_HZ, 100 on Linux).
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
  } catch {
    return null;
  }
}

/** b − a, or null when either is unknown. */
export const since = (a: number | null, b: number | null): number | null => (a === null || b === null ? null : b - a);

/** Busy CPU time of the whole machine so far, all cores, in ms. */
export function machineBusyMs(): number {
  return cpus().reduce((sum, cpu) => sum + cpu.times.user + cpu.times.nice + cpu.times.sys + cpu.times.irq, 0);
}

/** CPU time of this process so far (all its threads), in ms. */
export function ownCpuMs(): number {
  const used = process.cpuUsage();
  return (used.user + used.system) / 1000;
}

/** Starts a node with `env` added to its environment (the mesh-process helper passes on ours). */
export async function startWithEnv(options: StartOptions, env: Record<string, string> | undefined): Promise<MeshProcess> {
  if (env === undefined) return startNode(options);
  const saved = Object.fromEntries(Object.keys(env).map((k) => [k, process.env[k]]));
  Object.assign(process.env, env);
  try {
    return await startNode(options);
  } finally {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
}

/**
 * Starts counting the machine's CPU time spent by processes other than this one and `pids`;
 * `stop()` gives it as a share of all the cores over the time since (0.5: one core of two), null
 * when a pid's CPU cannot be read (it ended). Wrapped around a measurement, it says how much the
 * machine's other work loaded it meanwhile.
 */
export async function otherProcessesMeter(
  pids: readonly (number | undefined)[],
): Promise<{ stop(): Promise<{ share: number | null; cpuMs: (number | null)[] }> }> {
  const before = await Promise.all(pids.map(processCpuMs));
  const [machine0, own0, start] = [machineBusyMs(), ownCpuMs(), performance.now()];
  return {
    async stop() {
      const [machine1, own1, end] = [machineBusyMs(), ownCpuMs(), performance.now()];
      const after = await Promise.all(pids.map(processCpuMs));
      const cpuMs = pids.map((_, i) => since(before[i]!, after[i]!));
      if (cpuMs.some((v) => v === null)) return { share: null, cpuMs };
      const others = machine1 - machine0 - (own1 - own0) - cpuMs.reduce<number>((a, b) => a + b!, 0);
      // CPU times come in 10 ms ticks, so over a short window the raw ratio can fall outside 0..1.
      const share = Math.max(0, others) / ((end - start) * cpus().length);
      return { share: Math.min(1, share), cpuMs };
    },
  };
}

/**
 * Waits `ms` and says how busy the machine was meanwhile with processes other than this one and
 * `pids` (see otherProcessesMeter). Taken while the benchmark's own processes idle, it tells
 * whether something else shared the machine.
 */
export async function otherProcessesShare(pids: readonly (number | undefined)[], ms: number): Promise<{ share: number | null; cpuMs: (number | null)[] }> {
  const meter = await otherProcessesMeter(pids);
  await new Promise((resolve) => setTimeout(resolve, ms));
  return meter.stop();
}
