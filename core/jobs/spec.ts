/**
 * The off-chain job spec: what a host needs to run a job (image, command, environment, limits).
 * The JobBid carries only its hash; the spec travels to the host in the offer (core/jobs/wire.ts),
 * and the host checks it against the bid before it runs anything. Canonical binary, so one spec has
 * one hash (docs/jobs.md "The spec").
 */
import { sha256 } from '../crypto/sha256.ts';
import { formatCredits } from '../encoding/amount.ts';
import { array, decode, encode, type Infer, option, struct, u8, u16, u32, utf8 } from '../encoding/codec.ts';
import { domainBytes } from '../ledger/domain.ts';
import { EXPIRY_BLOCKS, HEARTBEAT_INTERVAL_SECS } from '../ledger/params.ts';
import { BILLING_HEARTBEAT, BILLING_SETTLE, type TxOf } from '../ledger/tx.ts';
import type { Billing, JobRequest } from './types.ts';

/** Bounds of a spec (the API's validation states the same, docs/jobs.md). */
export const SPEC_LIMITS = {
  imageBytes: 255,
  cmdItems: 256,
  cmdItemBytes: 4096,
  envPairs: 256,
  envKeyBytes: 256,
  envValueBytes: 4096,
} as const;

export const jobSpecCodec = struct(
  {
    image: utf8(SPEC_LIMITS.imageBytes),
    cmd: option(array(utf8(SPEC_LIMITS.cmdItemBytes), SPEC_LIMITS.cmdItems)),
    env: array(struct({ key: utf8(SPEC_LIMITS.envKeyBytes), value: utf8(SPEC_LIMITS.envValueBytes) }, 'env pair'), SPEC_LIMITS.envPairs),
    cpu_cores: u16,
    mem_mb: u32,
    duration_secs: u32,
    gpus: u8,
    billing: u8,
  },
  'job spec',
);

export type JobSpec = Infer<typeof jobSpecCodec>;

/** The spec of a validated bid. */
export function specOf(request: JobRequest): JobSpec {
  return {
    image: request.image,
    cmd: request.cmd === null ? null : [...request.cmd],
    env: request.env.map(([key, value]) => ({ key, value })),
    cpu_cores: request.cpuCores,
    mem_mb: request.memMb,
    duration_secs: request.durationSecs,
    gpus: request.gpus,
    billing: billingCode(request.billing),
  };
}

export function billingCode(billing: Billing): number {
  return billing === 'heartbeat' ? BILLING_HEARTBEAT : BILLING_SETTLE;
}

export function billingName(code: number): Billing {
  return code === BILLING_HEARTBEAT ? 'heartbeat' : 'settle';
}

export function encodeSpec(spec: JobSpec): Uint8Array {
  return encode(jobSpecCodec, spec);
}

/** Decodes a spec; throws InvalidEncodingError for anything non-canonical. */
export function decodeSpec(bytes: Uint8Array): JobSpec {
  return decode(jobSpecCodec, bytes);
}

/** The hash a JobBid carries: SHA-256 of the domain-tagged spec bytes. */
export function specHash(network: string, specBytes: Uint8Array): Uint8Array {
  return sha256(domainBytes('mesh/job-spec/1', network, specBytes));
}

/**
 * Why the bid does not describe this spec, or null when it does: the limits and billing the bid
 * locked credits for must be the ones the host is asked to run.
 */
export function bidMismatch(spec: JobSpec, bid: TxOf<'JobBid'>): string | null {
  if (spec.cpu_cores !== bid.cpu_cores) return `the spec asks for ${spec.cpu_cores} cores, the bid for ${bid.cpu_cores}`;
  if (spec.mem_mb !== bid.mem_mb) return `the spec asks for ${spec.mem_mb} MiB, the bid for ${bid.mem_mb}`;
  if (spec.duration_secs !== bid.duration_secs) return `the spec runs ${spec.duration_secs} s, the bid pays for ${bid.duration_secs}`;
  if (spec.billing !== bid.billing) return 'the spec and the bid are billed differently';
  return null;
}

/** The least a job that ran is billed: one second of its bid's rate, so a host never runs a short job for nothing. */
export const MIN_BILLED_MS = 1_000;

/**
 * Settle billing: the bid in proportion to the time the job ran, at least MIN_BILLED_MS and at most
 * its duration (the whole bid), rounded down.
 */
export function settleCost(bid: bigint, durationSecs: number, ranMs: number): bigint {
  const full = durationSecs * 1000;
  return (bid * BigInt(Math.min(Math.max(ranMs, MIN_BILLED_MS), full))) / BigInt(full);
}

/** Blocks a settle-billed job must end before its bid may be expired (a margin for late blocks). */
export const EXPIRY_MARGIN_BLOCKS = 60;

/**
 * What in a bid's terms no host takes: a heartbeat-billed bid that pays 0 per heartbeat (the
 * ledger's rate rounds down), and a settle-billed job that may run longer than its bid stays locked
 * (1,440 blocks from its acceptance, less a margin: the payer could expire it while it runs, and the host would never be paid).
 */
export function termsProblems(spec: JobSpec, bid: bigint, blockIntervalMs: number): string[] {
  if (spec.billing === BILLING_HEARTBEAT) {
    const intervals = BigInt(Math.max(1, Math.floor(spec.duration_secs / HEARTBEAT_INTERVAL_SECS)));
    return bid / intervals === 0n ? [`the bid of ${formatCredits(bid)} credits pays nothing per heartbeat over ${intervals} intervals`] : [];
  }
  const lockedMs = (EXPIRY_BLOCKS - EXPIRY_MARGIN_BLOCKS) * blockIntervalMs;
  if (spec.duration_secs * 1000 <= lockedMs) return [];
  return [`it may run ${spec.duration_secs} s, longer than a bid stays locked (about ${Math.floor(lockedMs / 1000)} s): bill it by heartbeat`];
}

/**
 * Why a spec that arrived from a peer cannot be run, or null: the engine takes no NUL in a command
 * or environment, and environment names follow the shell's grammar (the API refuses both already;
 * a host checks what another node sends it).
 */
export function specProblem(spec: JobSpec): string | null {
  const texts = [...(spec.cmd ?? []), ...spec.env.map((e) => e.value)];
  if (texts.some((t) => t.includes('\0'))) return 'the spec holds a NUL character';
  const bad = spec.env.find((e) => !/^[A-Za-z_][A-Za-z0-9_]*$/.test(e.key));
  return bad === undefined ? null : `the environment name ${JSON.stringify(bad.key.slice(0, 64))} is not a name`;
}
