/**
 * The capabilities benchmark's measurements, web-standard like the core they exercise: a host
 * checking a five-link token (`checkToken`: root, alignment, five signatures, narrowing, window,
 * presenter, a revocation look-up per link in a ledger state holding many revocations, the use),
 * next to the five Ed25519 verifications alone (`verifyBatch` over exactly the messages the token
 * carries), measured in the same interleaved rounds. Warm: the same token every time, its keys in
 * the core's key cache on both sides; cold: a token of keys never seen before for every sample,
 * as a host meets a new delegate.
 */
import { type CheckContext, checkToken, type Use } from '../../core/capabilities/check.ts';
import {
  type Allowance,
  decodeToken,
  encodeToken,
  type Link,
  linkSigningBytes,
  signLink,
  tokenBytes,
  unsignedLinkBytes,
} from '../../core/capabilities/token.ts';
import { type SignedMessage, SigningKey, verifyBatch } from '../../core/crypto/ed25519.ts';
import { LedgerState } from '../../core/ledger/state.ts';
import { seededRandom } from '../lib/random.ts';
import { compare, DEFAULT_MEASURE, formatDuration, type Measurement, type MeasureOptions } from '../lib/timing.ts';

export const LINKS = 5;
export const NETWORK = 'mesh-devnet';
/** Revocations in the ledger state the look-ups run against. */
export const REVOCATIONS = 10_000;

export const VERIFY_WARM = 'five Ed25519 verifications alone: verifyBatch';
export const CHECK_WARM = 'checkToken';
export const DECODE_CHECK_WARM = 'decodeToken + checkToken';
export const VERIFY_COLD = 'five verifications alone, keys never seen';
export const DECODE_CHECK_COLD = 'decodeToken + checkToken, keys never seen';

/** Each link bounds every field, as a delegation that narrows step by step would. */
const ALLOWS: Allowance = {
  commands: ['deploy', 'kill'],
  cpu_cores: 8,
  mem_mb: 8192,
  duration_secs: 86_400,
  bid: 10n ** 20n,
  images: ['localhost/', 'docker.io/library/'],
  nodes: null,
};

const NOW = 1_800_000_000;

/** A five-link token from `keys[0]` (the host) through `keys[1..5]`, and the messages it signs. */
export interface Workload {
  readonly host: SigningKey;
  readonly holder: Uint8Array;
  readonly token: Link[];
  readonly text: string;
  readonly messages: SignedMessage[];
}

let seed = 1;
/** A key from the benchmark's own sequence (the same keys on every run, never twice in one). */
function nextKey(): SigningKey {
  const random = seededRandom(seed++);
  return SigningKey.fromSeed(Uint8Array.from({ length: 32 }, () => Math.floor(random() * 256)));
}

/** A fresh five-link token of new keys, each link a little narrower than its parent. */
export async function makeWorkload(): Promise<Workload> {
  const keys = Array.from({ length: LINKS + 1 }, nextKey);
  const token: Link[] = [];
  for (let i = 0; i < LINKS; i++) {
    const allows = { ...ALLOWS, cpu_cores: ALLOWS.cpu_cores! - i, images: i === 0 ? ALLOWS.images : ['localhost/'] };
    const nonce = Uint8Array.from({ length: 16 }, (_, j) => (i * 16 + j + seed) & 0xff);
    token.push(await signLink(keys[i]!, NETWORK, { audience: keys[i + 1]!.publicKey, allows, not_before: NOW - 3600, expiry: NOW + 3600, nonce }));
  }
  const messages = token.map((l) => ({ publicKey: l.issuer, message: linkSigningBytes(NETWORK, unsignedLinkBytes(l)), signature: l.sig }));
  return { host: keys[0]!, holder: keys[LINKS]!.publicKey, token, text: encodeToken(token), messages };
}

/** A ledger state holding `count` revocations by as many issuers (none of the workload's links). */
export function revocationState(count: number): LedgerState {
  const state = new LedgerState();
  const random = seededRandom(7);
  const bytes = (): Uint8Array => Uint8Array.from({ length: 32 }, () => Math.floor(random() * 256));
  for (let i = 0; i < count; i++) state.setRevoked(bytes(), bytes(), i);
  return state;
}

/** The deploy the holder asks for, within every link. */
function deployOn(host: Uint8Array): Use {
  return { command: 'deploy', host, cpuCores: 2, memMb: 512, durationSecs: 600, bid: 10n ** 18n, image: 'localhost/busybox:test' };
}

function contextOf(w: Workload, state: LedgerState): CheckContext {
  return { network: NETWORK, roots: [w.host.publicKey], presenter: w.holder, nowSecs: NOW, revoked: (issuer, id) => state.revoked(issuer, id) !== undefined };
}

export interface CapabilityRow extends Measurement {
  /** Median ÷ the median of the five verifications alone of the same temperature. */
  readonly ratio: number;
}

export interface CapabilityCase {
  readonly links: number;
  readonly tokenBytes: number;
  readonly textChars: number;
  readonly revocations: number;
  readonly rows: readonly CapabilityRow[];
}

export interface CaseOptions {
  readonly quick: boolean;
  readonly log: (text: string) => void;
  /** Overrides the sampling (tests run it tiny). */
  readonly measure?: MeasureOptions;
}

/** Measures the warm and the cold comparison. */
export async function measureCapabilities(options: CaseOptions): Promise<CapabilityCase> {
  const { log } = options;
  const state = revocationState(options.quick ? 1_000 : REVOCATIONS);
  const warm = await makeWorkload();
  const warmCtx = contextOf(warm, state);
  const use = deployOn(warm.host.publicKey);
  // A check that fails here would time an error path: make sure it passes first.
  await checkToken(decodeToken(warm.text), use, warmCtx);
  const measure = options.measure ?? (options.quick ? { samples: 5, minSampleMs: 10, warmupMs: 30 } : { ...DEFAULT_MEASURE, samples: 25 });
  log(
    `== a ${LINKS}-link token (${tokenBytes(warm.token).length} bytes, ${warm.text.length} characters), ${state.size.toLocaleString('en-US')} revocations on chain`,
  );
  const warmRows = await compare(
    [
      { name: VERIFY_WARM, role: 'baseline', op: () => verifyBatch(warm.messages), note: 'the same five keys, already imported' },
      { name: CHECK_WARM, role: 'core', op: () => checkToken(warm.token, use, warmCtx), note: 'what the goal measures' },
      { name: DECODE_CHECK_WARM, role: 'core', op: () => checkToken(decodeToken(warm.text), use, warmCtx), note: 'from the text a host receives' },
    ],
    measure,
  );
  // Cold: each sample gets a token of six keys the core has never imported (made untimed).
  let fresh = await makeWorkload();
  const renew = async (): Promise<void> => {
    fresh = await makeWorkload();
  };
  const coldSamples = options.measure?.samples ?? (options.quick ? 5 : 41);
  const coldRows = await compare(
    [
      { name: VERIFY_COLD, role: 'baseline', setup: renew, op: () => verifyBatch(fresh.messages), samples: coldSamples },
      {
        name: DECODE_CHECK_COLD,
        role: 'core',
        setup: renew,
        op: () => checkToken(decodeToken(fresh.text), deployOn(fresh.host.publicKey), contextOf(fresh, state)),
        samples: coldSamples,
      },
    ],
    measure,
  );
  const withRatio = (rows: Measurement[]): CapabilityRow[] => rows.map((r) => ({ ...r, ratio: r.medianNs / rows[0]!.medianNs }));
  const rows = [...withRatio(warmRows), ...withRatio(coldRows)];
  for (const r of rows) log(`  ${r.name.padEnd(44)} ${formatDuration(r.medianNs).padStart(9)}  ${r.ratio.toFixed(2)}×`);
  return { links: LINKS, tokenBytes: tokenBytes(warm.token).length, textChars: warm.text.length, revocations: state.size, rows };
}
