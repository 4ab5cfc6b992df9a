/**
 * What `mesh profile` measures (docs/fabric.md "Measuring"): the machine's NodeProfile, taken by
 * an app (this command), never by the node.
 *
 * - Compute (CPU threads and cores, fp32 GFLOPS, memory bandwidth, memory): inside a job container
 *   when an engine answers and an image is named, with the sandbox and limits every job gets
 *   (host-node/docker-executor.ts), so the figures are what a job on this host gets. An image with
 *   Node runs compute-probe.cjs; one without (busybox) runs COMPUTE_SHELL, which measures what
 *   shell tools can (no GFLOPS). Otherwise in a child process on the host, running compute-probe.cjs.
 * - Storage: on the filesystem of the node's data directory, from this process (a job container
 *   has no view of it): sizes by statfs, throughput by a timed temporary file written with fsync,
 *   then read back, then removed.
 * - GPUs: `nvidia-smi` when present (fp16 TFLOPS not measured: null); none otherwise.
 * - Runtime: the host's os and arch; docker: an engine answers at DOCKER_HOST or the default
 *   socket; gvisor: jobs run under runsc there; wasm: this process instantiates WebAssembly.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { open, readFile, rm, statfs } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { EngineInfo } from '../../core/jobs/executor.ts';
import type { Gpu, ProfileMeasurement } from '../../core/netgraph/profile.ts';
import { DockerExecutor } from '../docker-executor.ts';

const run = promisify(execFile);
const MIB = 1024 * 1024;

/** compute-probe.cjs: the Node measurement, run as a file on the host and as `node -e` in a container. */
export const PROBE_FILE = fileURLToPath(new URL('./compute-probe.cjs', import.meta.url));
/** How long a containerised measurement may take, pull excluded. */
const CONTAINER_TIMEOUT_MS = 120_000;
/** The temporary file's size for the storage figures. */
export const STORAGE_SAMPLE_BYTES = 64 * MIB;

/**
 * The container's command: the Node probe when the image has `node`, else shell tools alone
 * (busybox's sh, grep, cat, dd): the facts as `MESH-FACT <name> <value>` lines, and a timed copy
 * of /dev/zero to /dev/null in 64 MiB blocks (the kernel writing into a buffer larger than any
 * cache) for the memory bandwidth, timed by /proc/uptime in hundredths of a second over at least
 * half a second.
 */
export const COMPUTE_SHELL = [
  'if command -v node >/dev/null 2>&1; then exec node -e "$MESH_PROFILE_JS"; fi',
  'echo "MESH-FACT threads $(grep -c ^processor /proc/cpuinfo)"',
  // cgroup v2 files, else v1's (whose quota -1 and huge limit mean none).
  'echo "MESH-FACT cpu.max $(cat /sys/fs/cgroup/cpu.max 2>/dev/null || echo $(cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us) $(cat /sys/fs/cgroup/cpu/cpu.cfs_period_us))"',
  'echo "MESH-FACT memory.max $(cat /sys/fs/cgroup/memory.max 2>/dev/null || cat /sys/fs/cgroup/memory/memory.limit_in_bytes 2>/dev/null)"',
  'echo "MESH-FACT memory.current $(cat /sys/fs/cgroup/memory.current 2>/dev/null || cat /sys/fs/cgroup/memory/memory.usage_in_bytes 2>/dev/null)"',
  'echo "MESH-FACT MemTotal $(grep ^MemTotal: /proc/meminfo)"',
  'echo "MESH-FACT MemAvailable $(grep ^MemAvailable: /proc/meminfo)"',
  // biome-ignore lint/suspicious/noTemplateCurlyInString: shell parameter expansion, run by sh.
  'cs() { set -- $(cat /proc/uptime); echo "${1%.*}${1#*.}"; }',
  'start=$(cs); n=0; now=$start',
  'while [ $((now - start)) -lt 50 ] && [ $n -lt 64 ]; do dd if=/dev/zero of=/dev/null bs=67108864 count=4 2>/dev/null; n=$((n + 1)); now=$(cs); done',
  'echo "MESH-FACT copied $((n * 268435456)) $((now - start))"',
].join('\n');

/** What the compute measurement gives. */
export interface ComputeFigures {
  readonly cpu: ProfileMeasurement['cpu'];
  readonly memory: ProfileMeasurement['memory'];
}

/** Where compute was measured, said in the command's output. */
export type MeasuredIn =
  | {
      readonly where: 'container';
      readonly engine: string;
      readonly image: string;
      readonly cpu_cores: number;
      readonly mem_mb: number;
      readonly probe: 'node' | 'shell';
    }
  | { readonly where: 'host'; readonly why: string };

const number = (text: string | undefined): number | null => {
  const value = Number(text);
  return text !== undefined && text !== '' && Number.isFinite(value) ? value : null;
};

/** The compute figures of the probe's output: its `MESH-PROFILE` line, or the shell's `MESH-FACT` lines. */
export function parseCompute(output: string): ComputeFigures & { probe: 'node' | 'shell' } {
  const line = output.split('\n').find((l) => l.startsWith('MESH-PROFILE '));
  if (line !== undefined) {
    const parsed = JSON.parse(line.slice('MESH-PROFILE '.length)) as ComputeFigures;
    return { cpu: parsed.cpu, memory: parsed.memory, probe: 'node' };
  }
  const facts = new Map<string, string>();
  for (const l of output.split('\n')) {
    const match = /^MESH-FACT (\S+) ?(.*)$/.exec(l.trim());
    if (match) facts.set(match[1]!, match[2]!.trim());
  }
  const visible = number(facts.get('threads'));
  if (visible === null || visible < 1) throw new Error(`the measurement printed no figures: ${JSON.stringify(output.slice(0, 400))}`);
  const [quota, period] = (facts.get('cpu.max') ?? '').split(/\s+/);
  const [q, p] = [number(quota), number(period)];
  const limit = q === null || p === null || q <= 0 || p <= 0 ? null : q / p;
  const threads = Math.max(1, limit === null ? visible : Math.min(visible, Math.ceil(limit)));
  const kb = (name: string): number | null => number(/(\d+) kB/.exec(facts.get(name) ?? '')?.[1]);
  const limitText = number(facts.get('memory.max'));
  const memMax = limitText !== null && limitText < 2 ** 60 ? limitText : null;
  const memUsed = number(facts.get('memory.current'));
  const total = Math.min((kb('MemTotal') ?? 0) * 1024, memMax ?? Infinity);
  const available = Math.min((kb('MemAvailable') ?? 0) * 1024, memMax === null || memUsed === null ? Infinity : memMax - memUsed, total);
  const [bytes, cs] = (facts.get('copied') ?? '').split(' ').map(Number);
  const memBw = bytes !== undefined && cs !== undefined && cs > 0 ? bytes / (cs / 100) / 1e9 : null;
  return {
    cpu: { cores: threads, threads, gflops_fp32: null, mem_bw_gbps: memBw },
    memory: { total_mb: Math.floor(total / MIB), available_mb: Math.max(0, Math.floor(available / MIB)) },
    probe: 'shell',
  };
}

/** The compute figures from a child process on the host. */
async function computeOnHost(): Promise<ComputeFigures> {
  const { stdout } = await run(process.execPath, [PROBE_FILE], { timeout: CONTAINER_TIMEOUT_MS });
  return parseCompute(stdout);
}

/** The compute figures from a job container of `image` with the job sandbox and these limits. */
async function computeInContainer(
  executor: DockerExecutor,
  image: string,
  limits: { cpuCores: number; memMb: number },
): Promise<ComputeFigures & { probe: 'node' | 'shell' }> {
  const probe = await readFile(PROBE_FILE, 'utf8');
  const id = await executor.run({
    name: `mesh-profile-${randomBytes(8).toString('hex')}`,
    image,
    cmd: ['sh', '-c', COMPUTE_SHELL],
    env: [['MESH_PROFILE_JS', probe]],
    cpuCores: limits.cpuCores,
    memMb: limits.memMb,
    gpus: 0,
    labels: { 'mesh.profile': '1' },
  });
  try {
    const state = await executor.wait(id, { signal: AbortSignal.timeout(CONTAINER_TIMEOUT_MS) });
    let out = '';
    let err = '';
    for await (const line of executor.logs(id)) {
      if (line.stream === 'stdout') out += `${line.text}\n`;
      else err += `${line.text}\n`;
    }
    if (state.exitCode !== 0)
      throw new Error(`the measurement container exited with ${state.exitCode}${state.oomKilled ? ' (out of memory)' : ''}: ${err.trim().slice(0, 400)}`);
    return parseCompute(out);
  } finally {
    await executor.remove(id).catch(() => {});
  }
}

/** Storage figures of the filesystem holding `dir`: sizes, and a timed temporary file written with fsync, read back and removed. */
export async function measureStorage(dir: string, sampleBytes = STORAGE_SAMPLE_BYTES): Promise<ProfileMeasurement['storage']> {
  const fs = await statfs(dir);
  const total_gb = (fs.blocks * fs.bsize) / 1e9;
  const free_gb = Math.min((fs.bavail * fs.bsize) / 1e9, total_gb);
  const path = join(dir, `.mesh-profile-${randomBytes(8).toString('hex')}.tmp`);
  const chunk = randomBytes(MIB);
  try {
    const writer = await open(path, 'wx', 0o600);
    let started = performance.now();
    try {
      for (let written = 0; written < sampleBytes; written += chunk.length) await writer.write(chunk, 0, chunk.length);
      await writer.sync();
    } finally {
      await writer.close();
    }
    const writeS = (performance.now() - started) / 1000;
    const reader = await open(path, 'r');
    const into = Buffer.alloc(MIB);
    started = performance.now();
    try {
      while ((await reader.read(into, 0, into.length)).bytesRead > 0);
    } finally {
      await reader.close();
    }
    const readS = (performance.now() - started) / 1000;
    return { total_gb, free_gb, read_mbps: sampleBytes / 1e6 / readS, write_mbps: sampleBytes / 1e6 / writeS };
  } finally {
    await rm(path, { force: true });
  }
}

/** GPUs `nvidia-smi` lists; none when it is absent or fails. */
export async function nvidiaGpus(): Promise<Gpu[]> {
  try {
    const { stdout } = await run('nvidia-smi', ['--query-gpu=name,memory.total', '--format=csv,noheader,nounits'], { timeout: 10_000 });
    return stdout
      .split('\n')
      .map((l) => l.split(',').map((f) => f.trim()))
      .filter(([model, mb]) => model && Number.isSafeInteger(Number(mb)))
      .slice(0, 16)
      .map(([model, mb]) => ({ model: model!.slice(0, 128), backend: 'Cuda', vram_mb: Number(mb), fp16_tflops: null }));
  } catch {
    return [];
  }
}

/** Whether this process can compile WebAssembly (the smallest module: magic and version). */
function wasmAvailable(): boolean {
  try {
    return new WebAssembly.Module(new Uint8Array([0, 0x61, 0x73, 0x6d, 1, 0, 0, 0])) instanceof WebAssembly.Module;
  } catch {
    return false;
  }
}

/** Rounds a figure to three significant decimals: more digits would be noise. */
const tidy = (value: number | null): number | null => (value === null ? null : Math.round(value * 1000) / 1000);

export interface MeasureOptions {
  /** The node's data directory: storage is measured on its filesystem. */
  readonly dataDir: string;
  /** Measure compute in a job container of this image (when an engine answers). */
  readonly image?: string;
  /** The container's limits (as a job's). */
  readonly cpuCores: number;
  readonly memMb: number;
  /** The engine (default: DOCKER_HOST or the default socket). */
  readonly executor?: DockerExecutor;
}

/** Measures this machine; `measuredIn` says where compute was measured. */
export async function measureProfile(options: MeasureOptions): Promise<{ measurement: ProfileMeasurement; measuredIn: MeasuredIn }> {
  const executor = options.executor ?? new DockerExecutor();
  const engine: EngineInfo | null = await executor.info().catch(() => null);
  let compute: ComputeFigures;
  let measuredIn: MeasuredIn;
  if (engine !== null && options.image !== undefined) {
    const figures = await computeInContainer(executor, options.image, options);
    compute = figures;
    measuredIn = { where: 'container', engine: engine.engine, image: options.image, cpu_cores: options.cpuCores, mem_mb: options.memMb, probe: figures.probe };
  } else {
    compute = await computeOnHost();
    measuredIn = { where: 'host', why: engine === null ? `no container engine answers at ${executor.address}` : 'no --image given' };
  }
  const storage = await measureStorage(options.dataDir);
  const measurement: ProfileMeasurement = {
    measured_at: Math.floor(Date.now() / 1000),
    cpu: { ...compute.cpu, gflops_fp32: tidy(compute.cpu.gflops_fp32), mem_bw_gbps: tidy(compute.cpu.mem_bw_gbps) },
    gpus: await nvidiaGpus(),
    memory: compute.memory,
    storage: { total_gb: tidy(storage.total_gb)!, free_gb: tidy(storage.free_gb)!, read_mbps: tidy(storage.read_mbps), write_mbps: tidy(storage.write_mbps) },
    llm: null,
    runtime: { os: process.platform, arch: process.arch, docker: engine !== null, gvisor: engine?.sandboxed ?? false, wasm: wasmAvailable() },
  };
  return { measurement, measuredIn };
}
