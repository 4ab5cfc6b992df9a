// The compute part of `mesh profile` (docs/fabric.md "Measuring"): CPU threads and cores, an fp32
// GFLOPS estimate, memory bandwidth and memory, as a job on this machine gets them. Plain CommonJS
// with no imports but node:*, so it runs as a file in a child process of the command on the host
// and as `node -e "$MESH_PROFILE_JS"` in a job container whose image has Node. It prints one line,
// `MESH-PROFILE <json>`, and nothing else on stdout.
'use strict';
const os = require('node:os');
const { readFileSync } = require('node:fs');
const { Worker } = require('node:worker_threads');

const KERNEL_MS = Number(process.env.MESH_PROFILE_KERNEL_MS) || 1000;
const COPY_MS = Number(process.env.MESH_PROFILE_COPY_MS) || 500;

function read(path) {
  try {
    return readFileSync(path, 'utf8').trim();
  } catch {
    return null;
  }
}

/** The CPU limit of this cgroup in cores (cgroup v2 cpu.max, v1 cfs quota), or null for none. */
function cpuLimit() {
  const v2 = read('/sys/fs/cgroup/cpu.max');
  if (v2 !== null) {
    const [quota, period] = v2.split(/\s+/);
    return quota === 'max' ? null : Number(quota) / Number(period);
  }
  const quota = Number(read('/sys/fs/cgroup/cpu/cpu.cfs_quota_us'));
  const period = Number(read('/sys/fs/cgroup/cpu/cpu.cfs_period_us'));
  return quota > 0 && period > 0 ? quota / period : null;
}

/** The memory limit of this cgroup in bytes and what it uses, or nulls. */
function memoryLimit() {
  const max = read('/sys/fs/cgroup/memory.max') ?? read('/sys/fs/cgroup/memory/memory.limit_in_bytes');
  const current = read('/sys/fs/cgroup/memory.current') ?? read('/sys/fs/cgroup/memory/memory.usage_in_bytes');
  const limit = max === null || max === 'max' ? null : Number(max);
  // cgroup v1 says "no limit" with a huge number.
  return { limit: limit !== null && limit < 2 ** 60 ? limit : null, used: current === null ? null : Number(current) };
}

/** Physical cores: distinct (physical id, core id) pairs of /proc/cpuinfo; null where it does not say. */
function physicalCores() {
  const info = read('/proc/cpuinfo');
  if (info === null) return null;
  const pairs = new Set();
  for (const block of info.split(/\n\s*\n/)) {
    const socket = /^physical id\s*:\s*(\d+)/m.exec(block);
    const core = /^core id\s*:\s*(\d+)/m.exec(block);
    if (socket && core) pairs.add(`${socket[1]}:${core[1]}`);
  }
  return pairs.size > 0 ? pairs.size : null;
}

// The fp32 kernel each worker runs: y = a·x + y over 4096 floats (2 flops per element), as often as
// fits in the time given. Scalar JavaScript, no SIMD: what a JavaScript job gets, not the silicon's peak.
const KERNEL = `
const { parentPort, workerData } = require('node:worker_threads');
const n = 4096;
const x = new Float32Array(n).map((_, i) => (i % 7) * 0.5);
const y = new Float32Array(n).map((_, i) => (i % 5) * 0.25);
const a = Math.fround(0.999);
let rounds = 0;
const start = performance.now();
let now = start;
while (now - start < workerData.ms) {
  for (let r = 0; r < 64; r++) {
    for (let i = 0; i < n; i++) y[i] = a * x[i] + y[i];
  }
  rounds += 64;
  now = performance.now();
}
parentPort.postMessage({ flops: rounds * n * 2, ms: now - start, check: y[1] });
`;

function kernelOn(ms) {
  return new Promise((resolve, reject) => {
    const worker = new Worker(KERNEL, { eval: true, workerData: { ms } });
    worker.once('message', resolve);
    worker.once('error', reject);
  });
}

/** Memory bandwidth in GB/s: 64 MiB copied from one buffer to another (read and write counted) for COPY_MS. */
function copyBandwidth() {
  const src = new Float64Array(8 * 1024 * 1024).fill(1.5);
  const dst = new Float64Array(src.length);
  let copies = 0;
  const start = performance.now();
  let now = start;
  while (now - start < COPY_MS) {
    dst.set(src);
    copies++;
    now = performance.now();
  }
  return (copies * 2 * src.byteLength) / ((now - start) / 1000) / 1e9;
}

function meminfo(name) {
  const match = new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(read('/proc/meminfo') ?? '');
  return match ? Number(match[1]) * 1024 : null;
}

async function main() {
  const limit = cpuLimit();
  const visible = os.availableParallelism();
  const threads = Math.max(1, limit === null ? visible : Math.min(visible, Math.ceil(limit)));
  const cores = Math.min(physicalCores() ?? threads, threads);
  const results = await Promise.all(Array.from({ length: threads }, () => kernelOn(KERNEL_MS)));
  const gflops = results.reduce((sum, r) => sum + r.flops / (r.ms / 1000), 0) / 1e9;
  const memBw = copyBandwidth();
  const memory = memoryLimit();
  const total = Math.min(os.totalmem(), memory.limit ?? Infinity);
  const free = meminfo('MemAvailable') ?? os.freemem();
  const available = Math.min(free, memory.limit === null || memory.used === null ? Infinity : memory.limit - memory.used, total);
  const out = {
    probe: 'node',
    node: process.version,
    cpu_limit: limit,
    cpu: { cores, threads, gflops_fp32: gflops, mem_bw_gbps: memBw },
    memory: { total_mb: Math.floor(total / 1048576), available_mb: Math.max(0, Math.floor(available / 1048576)) },
    wasm: typeof WebAssembly === 'object',
  };
  process.stdout.write(`MESH-PROFILE ${JSON.stringify(out)}\n`);
}

main().catch((error) => {
  process.stderr.write(`${error?.stack ? error.stack : String(error)}\n`);
  process.exitCode = 1;
});
