/**
 * `mesh profile`: measures this machine (host-node/profile/measure.ts) and has the running node sign
 * and gossip the profile (POST /profiles); `mesh profile ls` and `mesh profile show <node-id>` read
 * the profiles the node holds (GET /profiles, GET /profiles/:node_id); `mesh fabric` prints the
 * node's fabric statistics (GET /fabric/stats). docs/fabric.md.
 */
import os from 'node:os';
import { resolve } from 'node:path';
import type { FabricStats } from '../../core/netgraph/fabric.ts';
import type { ProfileJson, ProfileMeasurement } from '../../core/netgraph/profile.ts';
import { type MeasuredIn, measureProfile } from '../profile/measure.ts';
import { clientOptions, NodeClient } from './client.ts';
import { command, EXIT, entry, flag, option, positional } from './command.ts';
import { idPrefix, uniqueId } from './id-prefix.ts';
import { columns } from './table.ts';
import { decimal, integer } from './values.ts';

/** A node whose profile the node holds, by its id or the start of it. */
const nodeRef = idPrefix('a node id');

const figure = (value: number | null, unit: string): string => (value === null ? 'not measured' : `${value} ${unit}`);
const counted = (n: number, what: string): string => `${n} ${what}${n === 1 ? '' : 's'}`;

/** A profile (measured or held) as lines for people. */
export function formatProfile(profile: ProfileMeasurement & { node_id?: string }): string {
  const rows: [string, string][] = [];
  if (profile.node_id !== undefined) rows.push(['node id', profile.node_id]);
  rows.push(
    ['measured at', new Date(profile.measured_at * 1000).toISOString().replace('.000Z', 'Z')],
    ['cpu', `${counted(profile.cpu.cores, 'core')}, ${counted(profile.cpu.threads, 'thread')}`],
    ['  fp32', figure(profile.cpu.gflops_fp32, 'GFLOPS')],
    ['  memory bw', figure(profile.cpu.mem_bw_gbps, 'GB/s')],
    ['memory', `${profile.memory.available_mb} of ${profile.memory.total_mb} MiB available`],
    ['storage', `${profile.storage.free_gb} of ${profile.storage.total_gb} GB free`],
    ['  read', figure(profile.storage.read_mbps, 'MB/s')],
    ['  write', figure(profile.storage.write_mbps, 'MB/s')],
    ...profile.gpus.map((g, i): [string, string] => [`gpu ${i}`, `${g.model} (${g.backend}), ${g.vram_mb} MiB, ${figure(g.fp16_tflops, 'fp16 TFLOPS')}`]),
    ['gpus', profile.gpus.length === 0 ? 'none' : String(profile.gpus.length)],
    ['llm', profile.llm === null ? 'not measured' : `${profile.llm.ref_model}: ${profile.llm.tokens_per_sec} tokens/s`],
    [
      'runtime',
      `${profile.runtime.os}/${profile.runtime.arch}; docker ${profile.runtime.docker ? 'yes' : 'no'}, gvisor ${profile.runtime.gvisor ? 'yes' : 'no'}, wasm ${profile.runtime.wasm ? 'yes' : 'no'}`,
    ],
  );
  return rows.map(([name, value]) => `${name.padEnd(13)}${value}\n`).join('');
}

/** Where compute was measured, in one line. */
export function formatMeasuredIn(where: MeasuredIn): string {
  if (where.where === 'host') return `compute measured on the host in a child process (${where.why})`;
  const probe = where.probe === 'node' ? 'with Node' : 'with shell tools: no fp32 figure';
  return `compute measured in a job container of ${where.image} on ${where.engine} (${counted(where.cpu_cores, 'core')}, ${where.mem_mb} MiB; ${probe})`;
}

const measureCommand = command({
  description:
    "Measures this machine and has the running node sign and gossip the profile (POST /profiles): CPU cores and threads, an fp32 GFLOPS estimate and memory bandwidth, memory, storage of the data directory's filesystem with its read and write speed, GPUs (nvidia-smi), runtime flags. With --image and a reachable container engine, compute is measured inside a job container with the limits every job gets; otherwise in a child process on the host, and the output says which. The node measures nothing itself.",
  options: {
    ...clientOptions,
    image: option({
      value: 'IMAGE',
      description: 'measure compute in a job container of this image (one with node measures everything; a shell-only one, all but GFLOPS)',
    }),
    'cpu-cores': option({ value: 'N', description: "the container's CPU limit (default: this machine's threads)", parse: decimal(0.1, 4096) }),
    'mem-mb': option({ value: 'MIB', description: "the container's memory limit", default: 512, parse: integer(64, 1_000_000) }),
    'dry-run': flag('measure and print, without publishing'),
    json: flag('print the profile as JSON (the signed one the node answers, or with --dry-run the measurement), with where compute was measured'),
  },
  run: async ({ options }, io) => {
    const client = options['dry-run'] ? null : await NodeClient.find(options);
    const { measurement, measuredIn } = await measureProfile({
      dataDir: resolve(options['data-dir']),
      ...(options.image === undefined ? {} : { image: options.image }),
      cpuCores: options['cpu-cores'] ?? os.availableParallelism(),
      memMb: options['mem-mb'],
    });
    const profile: ProfileMeasurement | ProfileJson = client === null ? measurement : await client.post<ProfileJson>('/profiles', measurement);
    if (options.json) io.out(`${JSON.stringify({ profile, measured_in: measuredIn, published: client !== null }, null, 2)}\n`);
    else {
      io.out(formatProfile(profile));
      io.err(`${formatMeasuredIn(measuredIn)}\n${client === null ? 'not published (--dry-run)' : 'signed and gossiped by the node'}\n`);
    }
    return EXIT.done;
  },
});

const listCommand = command({
  description: 'Lists the node profiles the running node holds (GET /profiles): verified, measured within the last day, its own among them.',
  options: { ...clientOptions, json: flag('print the answer of GET /profiles as it is') },
  run: async ({ options }, io) => {
    const answer = await (await NodeClient.find(options)).get<{ profiles: ProfileJson[] }>('/profiles');
    if (options.json) io.out(`${JSON.stringify(answer, null, 2)}\n`);
    else if (answer.profiles.length === 0) io.err('no profiles held\n');
    else {
      const head = ['NODE', 'MEASURED', 'CORES', 'GFLOPS', 'MEM MIB', 'GPUS', 'FREE GB'];
      const rows = answer.profiles.map((p) => [
        p.node_id.slice(0, 16),
        new Date(p.measured_at * 1000).toISOString().replace('.000Z', 'Z'),
        String(p.cpu.cores),
        p.cpu.gflops_fp32 === null ? '-' : String(p.cpu.gflops_fp32),
        String(p.memory.total_mb),
        String(p.gpus.length),
        String(p.storage.free_gb),
      ]);
      io.out(columns([head, ...rows]));
    }
    return EXIT.done;
  },
});

const showCommand = command({
  description: 'Shows the profile the running node holds for one node (GET /profiles/:node_id).',
  options: { ...clientOptions, json: flag('print the signed profile as the node sent it') },
  positionals: { node_id: positional('NODE-ID', 'the node whose profile to show: its id, or its first characters as mesh profile ls shows them', nodeRef) },
  run: async ({ options, args }, io) => {
    const client = await NodeClient.find(options);
    const held = async (): Promise<string[]> => (await client.get<{ profiles: ProfileJson[] }>('/profiles')).profiles.map((p) => p.node_id);
    const node =
      args.node_id.length === 64 ? args.node_id : uniqueId(await held(), args.node_id, { none: 'the node holds no profile of a node', plural: 'profiles' });
    const profile = await client.get<ProfileJson>(`/profiles/${node}`);
    io.out(options.json ? `${JSON.stringify(profile, null, 2)}\n` : formatProfile(profile));
    return EXIT.done;
  },
});

export const profileCommand = command({
  description: measureCommand.description!,
  options: measureCommand.options,
  commands: [entry('ls', 'list the profiles the node holds', () => listCommand), entry('show', "show one node's profile", () => showCommand)],
  run: (input, io) => measureCommand.run!(input, io),
});

/** FabricStats as lines for people. */
export function formatFabric(stats: FabricStats): string {
  const none = (value: number | null, unit = ''): string => (value === null ? '-' : `${value}${unit}`);
  const rows: [string, string][] = [
    ['nodes', String(stats.nodes)],
    ['cpu cores', String(stats.cpu_cores)],
    ['cpu GFLOPS', String(stats.cpu_gflops)],
    ['gpus', `${stats.gpus} (${stats.gpu_vram_mb} MiB, ${stats.gpu_tflops} fp16 TFLOPS)`],
    ['tokens/s', String(stats.tokens_per_sec)],
    ['storage free', `${stats.storage_free_gb} GB`],
    ['perf score', String(stats.perf_score)],
    ['median rtt', none(stats.mesh.median_rtt_ms, ' ms')],
    ['reachable', stats.mesh.reachable_frac === null ? '-' : `${Math.round(stats.mesh.reachable_frac * 1000) / 10} %`],
    ['regions', none(stats.mesh.regions)],
  ];
  return rows.map(([name, value]) => `${name.padEnd(14)}${value}\n`).join('');
}

export const fabricCommand = command({
  description:
    "Prints the running node's fabric statistics (GET /fabric/stats): nodes known, cores, GFLOPS, GPUs, tokens/s and free storage summed over the profiles it holds and the atlas, the perf score, and the links it measured.",
  options: { ...clientOptions, json: flag('print the answer of GET /fabric/stats as it is') },
  run: async ({ options }, io) => {
    const stats = await (await NodeClient.find(options)).get<FabricStats>('/fabric/stats');
    io.out(options.json ? `${JSON.stringify(stats, null, 2)}\n` : formatFabric(stats));
    return EXIT.done;
  },
});
