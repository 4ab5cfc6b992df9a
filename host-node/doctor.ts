/**
 * `mesh doctor`: whether this machine can host jobs, checked the way a job uses it, with the fix
 * for each problem. It asks the container engine the executor uses (DOCKER_HOST or Docker's
 * socket) what it offers, then starts and removes one container shaped as a job is, from an
 * allowed image already on the engine: the failures users meet first (rlimits a sandbox will not
 * raise, a cgroup manager without systemd) show only when a container is created.
 */
import { readFile } from 'node:fs/promises';
import type { EngineInfo } from '../core/jobs/executor.ts';
import { imageAllowed } from '../core/jobs/policy.ts';
import { command, EXIT, flag, list } from './cli/command.ts';
import { DockerExecutor, type EngineReport } from './docker-executor.ts';

export type Verdict = 'ok' | 'warn' | 'fail' | 'skip';

/** One check: what it found and, for a problem, what to do about it. */
export interface Finding {
  readonly check: string;
  readonly verdict: Verdict;
  readonly detail: string;
  readonly fix?: string;
}

export interface DoctorOptions {
  /** The images the node is to run (`mesh node --allow-image`). */
  readonly allowImages: readonly string[];
  /** The executor to check (default: the one `mesh node` would use). */
  readonly executor?: DockerExecutor;
  /** How long the test container may take to start and exit. */
  readonly launchTimeoutMs?: number;
}

const LAUNCH_TIMEOUT_MS = 60_000;

const PODMAN_SERVICE = 'podman system service --time=0 unix:///run/podman/podman.sock &  then  export DOCKER_HOST=unix:///run/podman/podman.sock';
const CONTAINERS_CONF = `write /etc/containers/containers.conf (or a file CONTAINERS_CONF names) with
  [containers]
  default_ulimits = ["nofile=4096:4096", "nproc=4096:4096"]
  [engine]
  cgroup_manager = "cgroupfs"
  runtime = "runc"
and restart the Podman service (README, "Running jobs")`;

/** Every check, in order; a check that needs the engine is skipped when it does not answer. */
export async function diagnose(options: DoctorOptions): Promise<Finding[]> {
  const executor = options.executor ?? new DockerExecutor();
  const findings: Finding[] = [allowList(options.allowImages), await rlimits()];
  let report: EngineReport;
  try {
    report = await executor.report();
  } catch (error) {
    findings.unshift(noEngine(executor.address, error));
    for (const check of ['runtime', 'cgroups', 'images', 'launch']) findings.push({ check, verdict: 'skip', detail: 'no engine to ask' });
    return findings;
  }
  findings.unshift({ check: 'engine', verdict: 'ok', detail: `${report.engine.engine} answers at ${executor.address}` });
  findings.push(runtime(report.engine), cgroups(report));
  const present = report.images.filter((image) => options.allowImages.length > 0 && imageAllowed(image, options.allowImages));
  findings.push(images(options.allowImages, present));
  findings.push(
    present.length === 0
      ? { check: 'launch', verdict: 'skip', detail: 'no allowed image on the engine to start' }
      : await launch(executor, present[0]!, options),
  );
  return findings;
}

function noEngine(address: string, error: unknown): Finding {
  const why = error instanceof Error ? error.message : String(error);
  const denied = /EACCES|permission denied/i.test(why);
  return {
    check: 'engine',
    verdict: 'fail',
    detail: why,
    fix: denied
      ? `this user may not use ${address}: add it to the docker group, or run Podman's service as this user`
      : `start Docker (systemctl start docker), or Podman's Docker-compatible service: ${PODMAN_SERVICE}`,
  };
}

function allowList(allowImages: readonly string[]): Finding {
  if (allowImages.length === 0) {
    return {
      check: 'allow-list',
      verdict: 'warn',
      detail: 'no image allowed: the node runs only directed jobs from its admins and capability holders',
      fix: 'name the images to run: mesh node --allow-image IMAGE (repeatable; docker.io/library/ for official images)',
    };
  }
  return { check: 'allow-list', verdict: 'ok', detail: `runs ${allowImages.join(', ')}` };
}

/** The hard limits this user's processes get, which containers inherit unless the engine asks for more. */
async function rlimits(): Promise<Finding> {
  let text: string;
  try {
    text = await readFile('/proc/self/limits', 'utf8');
  } catch {
    return { check: 'rlimits', verdict: 'skip', detail: 'no /proc/self/limits on this system' };
  }
  const hard = (name: string): string =>
    text
      .split('\n')
      .find((line) => line.startsWith(name))
      ?.slice(26)
      .trim()
      .split(/\s+/)[1] ?? '?';
  return {
    check: 'rlimits',
    verdict: 'ok',
    detail: `open files ≤ ${hard('Max open files')}, processes ≤ ${hard('Max processes')} (hard); the launch shows whether the engine asks for more`,
  };
}

function runtime(engine: EngineInfo): Finding {
  if (engine.sandboxed) return { check: 'runtime', verdict: 'ok', detail: `jobs run under gVisor (${engine.runtime})` };
  return {
    check: 'runtime',
    verdict: 'warn',
    detail: `jobs run under ${engine.runtime}, without gVisor: a container escape reaches this machine's kernel`,
    fix: 'install gVisor (runsc) and make it a Docker runtime (/etc/docker/daemon.json), or Podman\'s default (runtime = "runsc" in containers.conf)',
  };
}

function cgroups(report: EngineReport): Finding {
  const missing = [report.memoryLimit ? '' : 'memory limits', report.cpuQuota ? '' : 'CPU quotas', report.pidsLimit ? '' : 'process limits'].filter(
    (m) => m !== '',
  );
  const version = `cgroup v${report.cgroupVersion ?? '?'}`;
  if (missing.length === 0) return { check: 'cgroups', verdict: 'ok', detail: `${version}: memory, CPU and process limits are enforced` };
  return {
    check: 'cgroups',
    verdict: 'fail',
    detail: `${version}: the engine cannot enforce ${missing.join(', ')}, which every job's sandbox sets`,
    fix: 'enable the controllers (cgroup v2, or cgroup_enable=memory swapaccount=1 on the kernel command line) and restart the engine',
  };
}

function images(allowImages: readonly string[], present: readonly string[]): Finding {
  if (allowImages.length === 0) return { check: 'images', verdict: 'skip', detail: 'no image allowed' };
  if (present.length > 0) return { check: 'images', verdict: 'ok', detail: `allowed and on the engine: ${present.join(', ')}` };
  return {
    check: 'images',
    verdict: 'warn',
    detail: 'none of the allowed images is on the engine: the first job of each waits for a pull, and fails without a registry',
    fix: 'pull them ahead: docker pull IMAGE (or podman pull IMAGE); offline, build one: podman import FILE.tar IMAGE',
  };
}

/** Starts, waits for and removes one container shaped as a job is (no network, limits, read-only root). */
async function launch(executor: DockerExecutor, image: string, options: DoctorOptions): Promise<Finding> {
  const started = performance.now();
  const name = `mesh-doctor-${process.pid}-${Date.now().toString(36)}`;
  let id: string | undefined;
  try {
    id = await executor.run({ name, image, cmd: ['true'], env: [], cpuCores: 0.5, memMb: 64, gpus: 0, labels: {} });
    const state = await executor.wait(id, { signal: AbortSignal.timeout(options.launchTimeoutMs ?? LAUNCH_TIMEOUT_MS) });
    const ms = Math.round(performance.now() - started);
    return { check: 'launch', verdict: 'ok', detail: `a job-shaped container of ${image} started and exited (code ${state.exitCode}) in ${ms} ms` };
  } catch (error) {
    return launchFailure(image, error instanceof Error ? error.message : String(error));
  } finally {
    if (id !== undefined) await executor.remove(id).catch(() => {});
  }
}

/** A failed launch, with the fix for the engine's reason. */
export function launchFailure(image: string, reason: string): Finding {
  // The image has no `true`: the container was created and the runtime got as far as the command.
  if (/executable file not found|no such file or directory.*true|"true": /i.test(reason)) {
    return {
      check: 'launch',
      verdict: 'ok',
      detail: `a job-shaped container of ${image} was created; the image has no \`true\` to run, which a job names itself`,
    };
  }
  const fix = /rlimit/i.test(reason)
    ? `the engine asks for more open files or processes than this machine allows: ${CONTAINERS_CONF}`
    : /cgroup|systemd|dbus/i.test(reason)
      ? `the engine's cgroup manager is not usable here: ${CONTAINERS_CONF}`
      : /crun|runc|oci runtime/i.test(reason)
        ? `the OCI runtime failed: install runc (apt-get install runc) and name it in containers.conf: ${CONTAINERS_CONF}`
        : "read the engine's reason above; `podman run --rm IMAGE true` (or docker run) shows the same failure outside mesh";
  return { check: 'launch', verdict: 'fail', detail: `a job-shaped container of ${image} did not run: ${reason}`, fix };
}

const MARK: Record<Verdict, string> = { ok: 'ok', warn: 'warn', fail: 'FAIL', skip: '–' };

/** The findings as lines for a terminal, fixes indented under their check. */
export function formatFindings(findings: readonly Finding[]): string {
  const width = Math.max(...findings.map((f) => f.check.length));
  const indent = ' '.repeat(width + 7);
  const fixOf = (fix: string): string => `${indent}fix: ${fix.split('\n').join(`\n${indent}     `)}\n`;
  return findings.map((f) => `${MARK[f.verdict].padEnd(5)}${f.check.padEnd(width + 2)}${f.detail}\n${f.fix === undefined ? '' : fixOf(f.fix)}`).join('');
}

export const doctorCommand = command({
  description:
    'Checks that this machine can host jobs: the container engine (DOCKER_HOST or /var/run/docker.sock), the runtime, rlimits, cgroups, the allow-list and its images, and one job-shaped container started and removed; prints the fix for each problem.',
  options: {
    'allow-image': list({ value: 'IMAGE', description: 'an image the node is to run, as mesh node takes it (repeatable)' }),
    json: flag('print the findings as JSON'),
  },
  notes: 'Exit status 1 when a check fails; warnings leave it 0.',
  run: async ({ options }, io) => {
    const findings = await diagnose({ allowImages: options['allow-image'] });
    io.out(options.json ? `${JSON.stringify(findings, null, 2)}\n` : formatFindings(findings));
    return findings.some((f) => f.verdict === 'fail') ? EXIT.failed : EXIT.done;
  },
});
