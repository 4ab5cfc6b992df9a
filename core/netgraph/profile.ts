/**
 * NodeProfile (node-messaging.md §2 "Planned"; docs/fabric.md): what a machine offers, measured by
 * an app (`mesh profile`), never by the node, then signed by the node and gossiped so that every node
 * can add it to its fabric statistics.
 *
 * Wire form: the canonical binary of `profileBodyCodec` (core/encoding/codec.ts) followed by the
 * node's Ed25519 signature over `domainBytes('mesh/node-profile/1', network, body)`, so a profile
 * stands on its own (GET /profiles serves it as received; anyone can check it) and is valid on one
 * network only. A figure the measurement could not take is null, never a made-up 0.
 */
import { SIGNATURE_LENGTH, type SigningKey, verify } from '../crypto/ed25519.ts';
import { concatBytes } from '../encoding/bytes.ts';
import { array, bool, bytes32, decode, encode, f64, type Infer, option, struct, u32, uint53, utf8 } from '../encoding/codec.ts';
import { toHex } from '../encoding/hex.ts';
import { DecodeError } from '../errors.ts';
import { domainBytes } from '../ledger/domain.ts';
import { ProfileError } from './errors.ts';

/** The gossip topic profiles travel on (distinct from every `mesh-app/<topic>` and the spec's fixed topics). */
export const PROFILES_TOPIC = 'mesh/profiles/1';
/** GPU backends, as the spec names them. */
export const GPU_BACKENDS = ['Cuda', 'Metal', 'Rocm', 'Vulkan'] as const;
export type GpuBackend = (typeof GPU_BACKENDS)[number];

/**
 * The bounds a profile must keep: generous for any machine of today, tight enough that one
 * profile cannot swamp the fabric's sums.
 */
export const PROFILE_LIMITS = Object.freeze({
  /** GPUs listed per profile. */
  gpus: 16,
  /** A GPU model's or reference model's name, in UTF-8 bytes. */
  nameBytes: 128,
  /** `runtime.os` and `runtime.arch`, in bytes of visible ASCII. */
  platformBytes: 32,
  /** CPU cores and hardware threads. */
  cores: 4096,
  /** fp32 GFLOPS of the CPUs (10 PFLOPS). */
  gflops: 10_000_000,
  /** Memory bandwidth in GB/s. */
  memBwGbps: 100_000,
  /** Memory in MB (1 PB) and one GPU's memory in MB (16 TB). */
  memoryMb: 1_000_000_000,
  vramMb: 16_000_000,
  /** fp16 TFLOPS of one GPU. */
  tflops: 100_000,
  /** Storage in GB (100 PB) and its throughput in MB/s. */
  storageGb: 100_000_000,
  storageMbps: 1_000_000,
  /** LLM tokens per second. */
  tokensPerSec: 10_000_000,
});

const name = utf8(PROFILE_LIMITS.nameBytes);
const platform = utf8(PROFILE_LIMITS.platformBytes);

export const cpuCodec = struct({ cores: u32, threads: u32, gflops_fp32: option(f64), mem_bw_gbps: option(f64) }, 'cpu');
export const gpuCodec = struct({ model: name, backend: utf8(8), vram_mb: uint53, fp16_tflops: option(f64) }, 'gpu');
export const memoryCodec = struct({ total_mb: uint53, available_mb: uint53 }, 'memory');
export const storageCodec = struct({ total_gb: f64, free_gb: f64, read_mbps: option(f64), write_mbps: option(f64) }, 'storage');
export const llmCodec = struct({ ref_model: name, tokens_per_sec: f64 }, 'llm');
export const runtimeCodec = struct({ os: platform, arch: platform, docker: bool, gvisor: bool, wasm: bool }, 'runtime');

const measurementFields = {
  measured_at: uint53,
  cpu: cpuCodec,
  gpus: array(gpuCodec, PROFILE_LIMITS.gpus),
  memory: memoryCodec,
  storage: storageCodec,
  llm: option(llmCodec),
  runtime: runtimeCodec,
};

/** What an app measures: everything but the node's id (POST /profiles takes this). */
export const measurementCodec = struct(measurementFields, 'ProfileMeasurement');
/** What the node signs: its id, then the measurement. */
export const profileBodyCodec = struct({ node_id: bytes32, ...measurementFields }, 'NodeProfile');

export type ProfileMeasurement = Infer<typeof measurementCodec>;
export type ProfileBody = Infer<typeof profileBodyCodec>;
export type Gpu = Infer<typeof gpuCodec>;

/** A profile as it travels: body ‖ signature. */
export interface SignedProfile {
  readonly body: ProfileBody;
  readonly bytes: Uint8Array;
  readonly signature: Uint8Array;
  /** `body.node_id` in hex. */
  readonly nodeId: string;
}

/** The JSON form of GET /profiles: the spec's fields, node_id and signature in hex. */
export type ProfileJson = Omit<ProfileBody, 'node_id'> & { node_id: string; signature: string };

const SIGNING_TAG = 'mesh/node-profile/1';
const VISIBLE_ASCII = /^[\x21-\x7e]+$/;
// Control characters (C0, DEL, C1) have no place in a model's name shown in tables.
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it finds.
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

function refuse(field: string, detail: string): never {
  throw new ProfileError('out-of-range', `${field} ${detail}`);
}

/** A finite number in [0, max]; -0 is refused as a second spelling of 0. */
function figure(field: string, value: number, max: number): void {
  if (!Number.isFinite(value) || value < 0 || Object.is(value, -0)) refuse(field, `must be a finite number ≥ 0, got ${value}`);
  if (value > max) refuse(field, `must be at most ${max}, got ${value}`);
}

function measured(field: string, value: number | null, max: number): void {
  if (value !== null) figure(field, value, max);
}

function integer(field: string, value: number, min: number, max: number): void {
  if (!Number.isSafeInteger(value) || value < min || value > max) refuse(field, `must be an integer in ${min}..${max}, got ${value}`);
}

function label(field: string, value: string, visibleAscii: boolean): void {
  if (value.length === 0) refuse(field, 'must not be empty');
  if (visibleAscii ? !VISIBLE_ASCII.test(value) : CONTROL.test(value) || value.trim() !== value) {
    refuse(field, visibleAscii ? 'must be visible ASCII characters' : 'must hold no control characters nor leading or trailing spaces');
  }
}

/**
 * Checks a measurement's bounds (PROFILE_LIMITS): figures finite and ≥ 0, at least one core and
 * thread, available memory and free storage within their totals, backends of the spec, names
 * neither empty nor carrying control characters. Throws ProfileError 'out-of-range' naming the field.
 * Sizes the codec bounds (names' bytes, GPUs listed) are checked by the codec.
 */
export function checkMeasurement(m: ProfileMeasurement): void {
  const L = PROFILE_LIMITS;
  integer('cpu.cores', m.cpu.cores, 1, L.cores);
  integer('cpu.threads', m.cpu.threads, 1, L.cores);
  measured('cpu.gflops_fp32', m.cpu.gflops_fp32, L.gflops);
  measured('cpu.mem_bw_gbps', m.cpu.mem_bw_gbps, L.memBwGbps);
  m.gpus.forEach((gpu, i) => {
    label(`gpus[${i}].model`, gpu.model, false);
    if (!(GPU_BACKENDS as readonly string[]).includes(gpu.backend))
      refuse(`gpus[${i}].backend`, `must be one of ${GPU_BACKENDS.join(', ')}, got ${JSON.stringify(gpu.backend)}`);
    integer(`gpus[${i}].vram_mb`, gpu.vram_mb, 0, L.vramMb);
    measured(`gpus[${i}].fp16_tflops`, gpu.fp16_tflops, L.tflops);
  });
  integer('memory.total_mb', m.memory.total_mb, 1, L.memoryMb);
  integer('memory.available_mb', m.memory.available_mb, 0, m.memory.total_mb);
  figure('storage.total_gb', m.storage.total_gb, L.storageGb);
  figure('storage.free_gb', m.storage.free_gb, m.storage.total_gb);
  measured('storage.read_mbps', m.storage.read_mbps, L.storageMbps);
  measured('storage.write_mbps', m.storage.write_mbps, L.storageMbps);
  if (m.llm !== null) {
    label('llm.ref_model', m.llm.ref_model, false);
    figure('llm.tokens_per_sec', m.llm.tokens_per_sec, L.tokensPerSec);
  }
  label('runtime.os', m.runtime.os, true);
  label('runtime.arch', m.runtime.arch, true);
}

/** What `work` gives, a codec's refusal made ProfileError 'malformed'. */
function byCodec<T>(work: () => T): T {
  try {
    return work();
  } catch (error) {
    if (error instanceof DecodeError) throw new ProfileError('malformed', error.message);
    throw error;
  }
}

function signingBytes(network: string, bodyBytes: Uint8Array): Uint8Array {
  return domainBytes(SIGNING_TAG, network, bodyBytes);
}

/**
 * This node's profile of `measurement`, signed with `key` for `network`. Throws ProfileError
 * 'out-of-range' (a bound) or 'malformed' (what the codec refuses: a name too long, too many GPUs).
 */
export async function signProfile(measurement: ProfileMeasurement, key: SigningKey, network: string): Promise<SignedProfile> {
  checkMeasurement(measurement);
  const body: ProfileBody = { node_id: key.publicKey, ...measurement };
  const bodyBytes = byCodec(() => encode(profileBodyCodec, body));
  const signature = await key.sign(signingBytes(network, bodyBytes));
  return { body, bytes: concatBytes(bodyBytes, signature), signature, nodeId: toHex(body.node_id) };
}

/**
 * A profile from its wire form: decoded, its bounds checked and its signature verified. Throws
 * ProfileError 'malformed', 'out-of-range' or 'bad-signature' (each gossip's 'reject').
 */
export async function openProfile(bytes: Uint8Array, network: string): Promise<SignedProfile> {
  if (bytes.length <= SIGNATURE_LENGTH) throw new ProfileError('malformed', `a profile of ${bytes.length} bytes is too short to hold a signature`);
  const bodyBytes = bytes.subarray(0, bytes.length - SIGNATURE_LENGTH);
  const signature = bytes.slice(bytes.length - SIGNATURE_LENGTH);
  const body = byCodec(() => decode(profileBodyCodec, bodyBytes));
  checkMeasurement(body);
  if (!(await verify(body.node_id, signingBytes(network, bodyBytes), signature))) {
    throw new ProfileError('bad-signature', `the profile of ${toHex(body.node_id).slice(0, 16)}… is not signed by its node`);
  }
  return { body, bytes: bytes.slice(), signature, nodeId: toHex(body.node_id) };
}

/** The JSON form (GET /profiles): the body's fields in the spec's order, node_id and signature in hex. */
export function profileJson(profile: SignedProfile): ProfileJson {
  const { node_id: _id, ...measurement } = profile.body;
  return { node_id: profile.nodeId, ...structuredClone(measurement), signature: toHex(profile.signature) };
}
