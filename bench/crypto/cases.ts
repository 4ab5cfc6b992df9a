/**
 * The crypto benchmark, defined once for every runtime: SHA-256, Ed25519 sign, verify and a
 * block's worth of verifications, through the core's API next to the runtime's own
 * implementations. Web-standard only; a runtime's extra baselines (node:crypto on Node) arrive
 * through `CryptoHost`, so Node, Deno and Chromium all run this same file.
 */

import { ED25519_PKCS8_PREFIX, type Ed25519Backend, ed25519Backends, type SignedMessage, SigningKey, verify, verifyBatch } from '../../core/crypto/ed25519.ts';
import { type Sha256Hasher, sha256, sha256Async, WEBCRYPTO_MIN_BYTES } from '../../core/crypto/sha256.ts';
import { concatBytes } from '../../core/encoding/bytes.ts';
import { textTable } from '../lib/table.ts';
import { type Contender, compare, DEFAULT_MEASURE, formatDuration, formatRate, type Measurement, type MeasureOptions } from '../lib/timing.ts';

export type RuntimeName = 'node' | 'deno' | 'chromium';

/** A runtime's own implementation of one operation, injected by the runtime's entry file. */
export interface NativeImpl<F> {
  readonly name: string;
  readonly make: F;
  readonly note?: string;
}

/** What a runtime entry gives the shared benchmark. Every field but the first four is optional. */
export interface CryptoHost {
  readonly runtime: RuntimeName;
  /** The runtime's version, e.g. "24.21.0". */
  readonly version: string;
  /** Anything else worth recording (V8, OpenSSL, user agent). */
  readonly details: Record<string, string>;
  /** Prints a line of progress; the tables are printed through it as they are measured. */
  readonly log: (text: string) => void;
  /**
   * One-shot native SHA-256 functions beside WebCrypto (node:crypto's `hash`). The first is the
   * reference of the SHA-256 cases, so it should do the core's work: bytes in, bytes out.
   */
  readonly nativeSha256?: readonly NativeImpl<() => (data: Uint8Array) => unknown>[];
  /**
   * Native hashers for the crossover sweep: the exact function the host plugs into the core
   * (`installed: true`), and any alternative worth comparing it with.
   */
  readonly sweepNativeSha256?: readonly (NativeImpl<() => (data: Uint8Array) => Uint8Array> & {
    readonly installed: boolean;
  })[];
  /** The host's native SHA-256, checked by the core, as the host hands it to what it constructs. */
  readonly hostSha256?: NativeImpl<() => Sha256Hasher>;
  /** Native signing with a key prepared once. */
  readonly nativeSign?: NativeImpl<(seed: Uint8Array, publicKey: Uint8Array) => (message: Uint8Array) => unknown>;
  /** Native verification with a key prepared once. */
  readonly nativeVerify?: NativeImpl<(publicKey: Uint8Array) => (message: Uint8Array, signature: Uint8Array) => unknown>;
  /**
   * Native ways to verify a block, importing every key. Those with `reference` are candidates
   * for the block's reference baseline (the fastest of them is used); the first of them should
   * be what the goals compare against.
   */
  readonly nativeBlockVerify?: readonly (NativeImpl<() => (items: readonly SignedMessage[]) => Promise<boolean[]> | boolean[]> & {
    readonly reference?: boolean;
  })[];
}

export interface SuiteOptions {
  readonly quick: boolean;
}

/** One row of a result table. */
export interface Row extends Measurement {
  /** This row's median ÷ the reference baseline's median, measured in the same comparison. */
  readonly ratio: number;
  /** Units of work per operation (bytes hashed, signatures verified), for throughput. */
  readonly units: number;
}

/** One comparison: a case, its reference baseline and every contender's figure. */
export interface CaseResult {
  readonly group: 'sha256' | 'sha256-sweep' | 'sign' | 'verify' | 'verify-block';
  readonly title: string;
  /** Bytes hashed, for SHA-256 cases. */
  readonly bytes?: number;
  readonly unit: 'B' | 'sig';
  /** The contender the ratios are against: the runtime's native implementation. */
  readonly reference: string;
  readonly rows: Row[];
}

/** Where one implementation overtakes another as the input grows, against a core constant. */
export interface Crossover {
  readonly constant: 'WEBCRYPTO_MIN_BYTES' | 'native hasher from';
  readonly constantBytes: number;
  readonly small: string;
  readonly large: string;
  /** Largest swept size where `small` was faster, and smallest from which `large` always was. */
  readonly lastSmallWins: number | null;
  readonly firstLargeWins: number | null;
  /** Where the time ratio crosses 1, interpolated on log scales; null if it never does. */
  readonly estimateBytes: number | null;
  readonly agrees: boolean;
  /** False for an alternative the host does not install: the check is what-if. */
  readonly actual: boolean;
  readonly remark: string;
}

export interface RuntimeResult {
  readonly runtime: RuntimeName;
  readonly version: string;
  readonly details: Record<string, string>;
  readonly backends: string[];
  readonly constants: { readonly WEBCRYPTO_MIN_BYTES: number };
  readonly cases: CaseResult[];
  readonly crossovers: Crossover[];
  /** Anything the run found odd about itself. */
  readonly notes: string[];
  readonly elapsedMs: number;
}

export const SHA_SIZES = [32, 1024, 1024 * 1024] as const;
export const SWEEP_SIZES = [32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536] as const;
export const BLOCK_SIGNATURES = 1024;
export const MESSAGE_BYTES = 100;

const ED25519 = { name: 'Ed25519' } as const;

function randomBytes(length: number): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(length);
  // getRandomValues fills at most 65,536 bytes per call.
  for (let at = 0; at < length; at += 65536) crypto.getRandomValues(out.subarray(at, Math.min(length, at + 65536)));
  return out;
}

/** "32 B", "1 KiB", "1 MiB". */
export function formatBytes(bytes: number): string {
  if (bytes >= 1048576 && bytes % 1048576 === 0) return `${bytes / 1048576} MiB`;
  if (bytes >= 1024 && bytes % 1024 === 0) return `${bytes / 1024} KiB`;
  return `${bytes} B`;
}

/** A size to two significant figures: "≈ 34 KiB" style, for interpolated estimates. */
export function approxBytes(bytes: number): string {
  if (bytes >= 1024) return `${Number((bytes / 1024).toPrecision(2))} KiB`;
  return `${Number(bytes.toPrecision(2))} B`;
}

function row(c: CaseResult, name: string): Row {
  const found = c.rows.find((r) => r.name === name);
  if (!found) throw new Error(`${c.title} has no row ${name}`);
  return found;
}

function toRows(measurements: Measurement[], reference: string, units: number): Row[] {
  const ref = measurements.find((m) => m.name === reference);
  if (!ref) throw new Error(`reference ${reference} was not measured`);
  return measurements.map((m) => ({ ...m, ratio: m.medianNs / ref.medianNs, units }));
}

/**
 * Locates where `large` overtakes `small` over a sweep of sizes and checks a constant that makes
 * that choice: it disagrees when at some swept size the constant picks the implementation that
 * measured more than `tolerance` slower.
 */
export function crossover(
  constant: Crossover['constant'],
  constantBytes: number,
  sweep: readonly { bytes: number; smallNs: number; largeNs: number }[],
  small: string,
  large: string,
  tolerance = 0.1,
  actual = true,
): Crossover {
  const points = [...sweep].sort((a, b) => a.bytes - b.bytes);
  // firstLargeWins: the smallest size from which `large` is faster at every larger size too.
  let firstIndex = points.length;
  for (let i = points.length - 1; i >= 0 && points[i]!.largeNs < points[i]!.smallNs; i--) firstIndex = i;
  const firstLargeWins = firstIndex < points.length ? points[firstIndex]!.bytes : null;
  const lastSmallWins = firstIndex > 0 ? points[firstIndex - 1]!.bytes : null;
  let estimateBytes: number | null = null;
  if (firstIndex > 0 && firstIndex < points.length) {
    const a = points[firstIndex - 1]!;
    const b = points[firstIndex]!;
    const ra = Math.log(a.largeNs / a.smallNs);
    const rb = Math.log(b.largeNs / b.smallNs);
    const t = ra / (ra - rb);
    estimateBytes = Math.round(2 ** (Math.log2(a.bytes) + t * (Math.log2(b.bytes) - Math.log2(a.bytes))));
  }
  const wrong: string[] = [];
  for (const p of points) {
    const picksLarge = p.bytes >= constantBytes;
    const chosen = picksLarge ? p.largeNs : p.smallNs;
    const other = picksLarge ? p.smallNs : p.largeNs;
    if (chosen > other * (1 + tolerance)) {
      wrong.push(
        `at ${formatBytes(p.bytes)} it picks ${picksLarge ? large : small}, ${(chosen / other).toFixed(2)}× slower than ${picksLarge ? small : large}`,
      );
    }
  }
  const where =
    firstLargeWins === null
      ? `${large} never faster up to ${formatBytes(points.at(-1)?.bytes ?? 0)}`
      : lastSmallWins === null
        ? `${large} faster from the smallest size swept (${formatBytes(firstLargeWins)})`
        : `crossover between ${formatBytes(lastSmallWins)} and ${formatBytes(firstLargeWins)}` +
          (estimateBytes === null ? '' : ` (≈${approxBytes(estimateBytes)})`);
  const agrees = wrong.length === 0;
  const subject = `${small} vs ${large}: ${where}; ${constant} = ${formatBytes(constantBytes)}`;
  const remark = agrees
    ? `${subject} ${actual ? 'agrees' : 'would agree'} (no swept size is >${Math.round(tolerance * 100)}% off the faster choice)`
    : `${subject} ${actual ? 'disagrees' : 'would disagree'}: ${wrong.join('; ')}`;
  return { constant, constantBytes, small, large, lastSmallWins, firstLargeWins, estimateBytes, agrees, actual, remark };
}

// ---------------------------------------------------------------------------------------------
// Key material.

/** 1,024 signed 100-byte messages under 1,024 distinct fresh keys, made with WebCrypto. */
export async function makeBlock(count = BLOCK_SIGNATURES): Promise<SignedMessage[]> {
  return Promise.all(
    Array.from({ length: count }, async () => {
      const pair = (await crypto.subtle.generateKey(ED25519, true, ['sign', 'verify'])) as CryptoKeyPair;
      const message = randomBytes(MESSAGE_BYTES);
      const [publicKey, signature] = await Promise.all([crypto.subtle.exportKey('raw', pair.publicKey), crypto.subtle.sign(ED25519, pair.privateKey, message)]);
      return { publicKey: new Uint8Array(publicKey), message, signature: new Uint8Array(signature) };
    }),
  );
}

/**
 * Enough keys to push anything out of the core's WebCrypto key cache (two generations of 4,096,
 * KEY_CACHE_GENERATION in core/crypto/ed25519.ts).
 */
export const CORE_KEY_CACHE = 8192;

/**
 * `count` fresh public keys, each with a signature that passes the encoding checks but not the
 * equation (R is another key, S is 0): verifying them costs what a real verification costs, and
 * puts the keys in the core's cache.
 */
export async function makeKeys(count: number): Promise<SignedMessage[]> {
  const keys = await Promise.all(
    Array.from({ length: count }, async () => {
      const pair = (await crypto.subtle.generateKey(ED25519, true, ['sign', 'verify'])) as CryptoKeyPair;
      return new Uint8Array(await crypto.subtle.exportKey('raw', pair.publicKey));
    }),
  );
  const message = randomBytes(MESSAGE_BYTES);
  return keys.map((publicKey, i) => {
    const signature = new Uint8Array(64);
    signature.set(keys[(i + 1) % keys.length]!);
    return { publicKey, message, signature };
  });
}

/** Raw WebCrypto on a block: import every key and verify, all in flight at once. */
export function webcryptoBlockVerify(items: readonly SignedMessage[]): Promise<boolean[]> {
  return Promise.all(
    items.map(async (item) => {
      const key = await crypto.subtle.importKey('raw', item.publicKey as Uint8Array<ArrayBuffer>, ED25519, false, ['verify']);
      return crypto.subtle.verify(ED25519, key, item.signature as Uint8Array<ArrayBuffer>, item.message as Uint8Array<ArrayBuffer>);
    }),
  );
}

function assertAllValid(result: unknown, what: string, count: number): void {
  if (!Array.isArray(result) || result.length !== count || !result.every((v) => v === true)) {
    throw new Error(`${what} did not accept every valid signature of the block`);
  }
}

// ---------------------------------------------------------------------------------------------
// The suite: one function per group of cases, run in this order by runCryptoSuite.

/** What every case group needs: the host, the sampling of this run, and where a case goes. */
interface Suite {
  readonly host: CryptoHost;
  readonly quick: boolean;
  readonly measure: MeasureOptions;
  /** Keeps a case and prints its table. */
  readonly record: (c: CaseResult) => void;
}

/** Runs the whole crypto benchmark on this runtime and returns its figures. */
export async function runCryptoSuite(host: CryptoHost, options: SuiteOptions): Promise<RuntimeResult> {
  const started = performance.now();
  const cases: CaseResult[] = [];
  const suite: Suite = {
    host,
    quick: options.quick,
    measure: options.quick ? { samples: 3, minSampleMs: 10, warmupMs: 30 } : DEFAULT_MEASURE,
    record: (c) => {
      cases.push(c);
      host.log(formatCase(c));
    },
  };
  host.log(`\n== ${host.runtime} ${host.version} — backends: ${ed25519Backends.map((b) => b.name).join(', ')}` + `${options.quick ? ' (quick)' : ''}`);
  const shaData = new Map(SHA_SIZES.map((n) => [n, randomBytes(n)] as const));
  await measureSha256(suite, shaData);
  const sweep = await measureSweep(suite);
  cases.push(...sweep.cases);
  await measureSha256Installed(suite, shaData);
  const keys = await keyMaterial();
  await measureSign(suite, keys);
  await measureVerify(suite, keys);
  await measureBlockVerify(suite);
  return {
    runtime: host.runtime,
    version: host.version,
    details: host.details,
    backends: ed25519Backends.map((b) => b.name),
    constants: { WEBCRYPTO_MIN_BYTES },
    cases,
    crossovers: sweep.crossovers,
    notes: [],
    elapsedMs: performance.now() - started,
  };
}

// --- SHA-256.

function webDigest(data: Uint8Array<ArrayBuffer>): () => Promise<ArrayBuffer> {
  return () => crypto.subtle.digest('SHA-256', data);
}

/** The SHA-256 cases' reference: the host's first native hasher, else WebCrypto. */
function shaReference(host: CryptoHost): string {
  return host.nativeSha256?.[0]?.name ?? 'WebCrypto subtle.digest';
}

function nativeShaContenders(host: CryptoHost, data: Uint8Array): Contender[] {
  return (host.nativeSha256 ?? []).map((native) => {
    const hash = native.make();
    const c: Contender = { name: native.name, role: 'baseline', op: () => hash(data) };
    return native.note === undefined ? c : { ...c, note: native.note };
  });
}

async function shaCase(suite: Suite, bytes: number, title: string, contenders: Contender[]): Promise<CaseResult> {
  const reference = shaReference(suite.host);
  return {
    group: 'sha256',
    title,
    bytes,
    unit: 'B',
    reference,
    rows: toRows(await compare(contenders, suite.measure), reference, bytes),
  };
}

/** SHA-256 at the three sizes, the core as it starts (no native hasher plugged in). */
async function measureSha256(suite: Suite, shaData: ReadonlyMap<number, Uint8Array<ArrayBuffer>>): Promise<void> {
  for (const [bytes, data] of shaData) {
    const contenders: Contender[] = [
      { name: 'core sha256', role: 'core', op: () => sha256(data) },
      { name: 'core sha256Async', role: 'core', op: () => sha256Async(data) },
      { name: 'WebCrypto subtle.digest', role: 'baseline', op: webDigest(data) },
      ...nativeShaContenders(suite.host, data),
    ];
    suite.record(await shaCase(suite, bytes, `SHA-256 of ${formatBytes(bytes)}`, contenders));
  }
}

/** SHA-256 again through the host's native hasher as the core is given it (what the Node host runs). */
async function measureSha256Installed(suite: Suite, shaData: ReadonlyMap<number, Uint8Array<ArrayBuffer>>): Promise<void> {
  const install = suite.host.hostSha256;
  if (!install) return;
  const hasher = install.make();
  for (const [bytes, data] of shaData) {
    const contenders: Contender[] = [
      { name: 'core sha256 +native', role: 'core', op: () => hasher.hash(data) },
      { name: 'core sha256Async +native', role: 'core', op: () => sha256Async(data, hasher) },
    ];
    if (suite.host.nativeSha256?.length) {
      contenders.push(...nativeShaContenders(suite.host, data));
    } else {
      contenders.push({ name: 'WebCrypto subtle.digest', role: 'baseline', op: webDigest(data) });
    }
    suite.record(await shaCase(suite, bytes, `SHA-256 of ${formatBytes(bytes)}, by ${install.name}`, contenders));
  }
}

/** The sweep behind WEBCRYPTO_MIN_BYTES and the choice of native hashing for every size. */
async function measureSweep(suite: Suite): Promise<{ cases: CaseResult[]; crossovers: Crossover[] }> {
  const { host } = suite;
  const sweepMeasure: MeasureOptions = suite.quick ? { samples: 3, minSampleMs: 5, warmupMs: 10 } : { samples: 5, minSampleMs: 15, warmupMs: 30 };
  const natives = host.sweepNativeSha256 ?? [];
  const reference = natives[0]?.name ?? 'WebCrypto subtle.digest';
  const cases: CaseResult[] = [];
  for (const bytes of SWEEP_SIZES) {
    const data = randomBytes(bytes);
    const contenders: Contender[] = [
      { name: 'wasm (core sha256)', role: 'core', op: () => sha256(data) },
      { name: 'WebCrypto subtle.digest', role: 'baseline', op: webDigest(data) },
    ];
    for (const native of natives) {
      const hash = native.make();
      contenders.push({ name: native.name, role: 'baseline', op: () => hash(data) });
    }
    cases.push({
      group: 'sha256-sweep',
      title: `SHA-256 sweep, ${formatBytes(bytes)}`,
      bytes,
      unit: 'B',
      reference,
      rows: toRows(await compare(contenders, sweepMeasure), reference, bytes),
    });
  }
  const crossovers = sweepCrossovers(host, cases);
  host.log(formatSweep(cases, crossovers));
  return { cases, crossovers };
}

/** Checks the core's constants against where the sweep's contenders overtake wasm. */
function sweepCrossovers(host: CryptoHost, cases: readonly CaseResult[]): Crossover[] {
  const points = (name: string): { bytes: number; smallNs: number; largeNs: number }[] =>
    cases.map((c) => ({ bytes: c.bytes!, smallNs: c.rows[0]!.medianNs, largeNs: row(c, name).medianNs }));
  // The async path's choice happens only where no native hasher is installed, and the constant
  // is tuned for browsers (Node installs a native hasher; Deno runs no host that hashes bulk data).
  const crossovers: Crossover[] = [
    crossover('WEBCRYPTO_MIN_BYTES', WEBCRYPTO_MIN_BYTES, points('WebCrypto subtle.digest'), 'wasm', 'WebCrypto', 0.1, host.runtime === 'chromium'),
  ];
  // An installed native hasher serves every size, so it must beat wasm from the smallest one.
  for (const native of host.sweepNativeSha256 ?? []) {
    crossovers.push(crossover('native hasher from', 0, points(native.name), 'wasm', native.name, 0.1, native.installed));
  }
  return crossovers;
}

// --- Ed25519 sign and verify of one message.

/** One key as every backend and WebCrypto hold it, a message and its signature. */
interface KeyMaterial {
  readonly seed: Uint8Array;
  readonly message: Uint8Array<ArrayBuffer>;
  readonly signers: readonly { readonly backend: Ed25519Backend; readonly key: SigningKey }[];
  readonly publicKey: Uint8Array;
  readonly signature: Uint8Array;
  readonly webSignKey: CryptoKey;
  readonly webVerifyKey: CryptoKey;
}

async function keyMaterial(): Promise<KeyMaterial> {
  const seed = randomBytes(32);
  const message = randomBytes(MESSAGE_BYTES);
  const signers = ed25519Backends.map((backend) => ({ backend, key: SigningKey.fromSeed(seed, backend) }));
  const publicKey = signers[0]!.key.publicKey;
  const signature = await signers[0]!.key.sign(message);
  const pkcs8 = concatBytes(ED25519_PKCS8_PREFIX, seed) as Uint8Array<ArrayBuffer>;
  const webSignKey = await crypto.subtle.importKey('pkcs8', pkcs8, ED25519, false, ['sign']);
  const webVerifyKey = await crypto.subtle.importKey('raw', publicKey as Uint8Array<ArrayBuffer>, ED25519, false, ['verify']);
  return { seed, message, signers, publicKey, signature, webSignKey, webVerifyKey };
}

/** Ed25519 sign of one 100-byte message. */
async function measureSign(suite: Suite, k: KeyMaterial): Promise<void> {
  const { host } = suite;
  const slow = (b: Ed25519Backend): number | undefined => (b.name === 'noble' && !suite.quick ? 5 : undefined);
  const contenders: Contender[] = k.signers.map(({ backend, key }) => {
    const c: Contender = { name: `core sign (${backend.name})`, role: 'core', op: () => key.sign(k.message) };
    const samples = slow(backend);
    return samples === undefined ? c : { ...c, samples };
  });
  contenders.push({
    name: 'WebCrypto subtle.sign',
    role: 'baseline',
    op: () => crypto.subtle.sign(ED25519, k.webSignKey, k.message),
    note: 'key imported once',
  });
  if (host.nativeSign) {
    const sign = host.nativeSign.make(k.seed, k.publicKey);
    contenders.push({ name: host.nativeSign.name, role: 'baseline', op: () => sign(k.message) });
  }
  const reference = host.nativeSign?.name ?? 'WebCrypto subtle.sign';
  suite.record({
    group: 'sign',
    title: `Ed25519 sign, ${MESSAGE_BYTES}-byte message`,
    unit: 'sig',
    reference,
    rows: toRows(await compare(contenders, suite.measure), reference, 1),
  });
}

/**
 * Ed25519 verify of one signature (the core's key cache is warm after the first call, as the
 * baselines' keys are imported once).
 */
async function measureVerify(suite: Suite, k: KeyMaterial): Promise<void> {
  const { host } = suite;
  const contenders: Contender[] = ed25519Backends.map((backend) => ({
    name: `core verify (${backend.name})`,
    role: 'core' as const,
    op: () => verify(k.publicKey, k.message, k.signature, backend),
  }));
  contenders.push({
    name: 'WebCrypto subtle.verify',
    role: 'baseline',
    op: () => crypto.subtle.verify(ED25519, k.webVerifyKey, k.signature as Uint8Array<ArrayBuffer>, k.message),
    note: 'key imported once',
  });
  if (host.nativeVerify) {
    const check = host.nativeVerify.make(k.publicKey);
    contenders.push({ name: host.nativeVerify.name, role: 'baseline', op: () => check(k.message, k.signature) });
  }
  for (const c of contenders) {
    const ok = await c.op();
    if (ok !== true) throw new Error(`${c.name} rejected a valid signature`);
  }
  const reference = host.nativeVerify?.name ?? 'WebCrypto subtle.verify';
  suite.record({
    group: 'verify',
    title: 'Ed25519 verify, one signature',
    unit: 'sig',
    reference,
    rows: toRows(await compare(contenders, suite.measure), reference, 1),
  });
}

// --- Ed25519 verify of a block: 1,024 signatures under 1,024 distinct keys.

/** The blocks of the block case, made before any is timed. */
interface BlockFixtures {
  /** Blocks never shown to the core: one per cold call (the warm-up call and every sample). */
  readonly coldPool: SignedMessage[][];
  /** The block the warm core contender sees again and again. */
  readonly warm: SignedMessage[];
  /** A block every verifier must accept in full before anything is timed. */
  readonly check: SignedMessage[];
  /** With `warm`, the blocks the baselines take in turn: they cache nothing. */
  readonly spare: SignedMessage[];
  /** Keys that fill the core's cache, as a long-running node's is. */
  readonly filler: SignedMessage[];
}

// Samples of the block case: more than the other cases take, since one Deno sample of a block
// reads up to a quarter off the next, and the goal holds the cold figure to 1.25× in every run.
const BLOCK_SAMPLES = 21;

function blockMeasure(suite: Suite): MeasureOptions {
  return { ...suite.measure, samples: suite.quick ? suite.measure.samples : BLOCK_SAMPLES, warmupMs: 0 };
}

async function makeBlockFixtures(suite: Suite): Promise<BlockFixtures> {
  const samples = blockMeasure(suite).samples;
  const making = performance.now();
  const coldPool: SignedMessage[][] = [];
  for (let i = 0; i < samples + 2; i++) coldPool.push(await makeBlock());
  const warm = await makeBlock();
  const check = await makeBlock();
  const spare = await makeBlock();
  const filler = await makeKeys(CORE_KEY_CACHE);
  suite.host.log(
    `   (made ${samples + 5} blocks of ${BLOCK_SIGNATURES} signed messages and ${CORE_KEY_CACHE} filler keys ` +
      `in ${((performance.now() - making) / 1000).toFixed(1)} s)`,
  );
  return { coldPool, warm, check, spare, filler };
}

/**
 * The baselines cache nothing, but see a different block each sample too, taking in turn the
 * warm and the spare block (blocks already used); so does noble, which has no key cache.
 */
interface Turns {
  readonly block: () => SignedMessage[];
  readonly next: () => void;
}

function turns(f: BlockFixtures): Turns {
  let block = f.spare;
  return {
    block: () => block,
    next: () => {
      block = block === f.spare ? f.warm : f.spare;
    },
  };
}

/** The core per backend: cold (a block of new keys every sample) and warm (the same block again). */
function coreBlockContenders(suite: Suite, f: BlockFixtures, turn: Turns): Contender[] {
  let cold: SignedMessage[] = [];
  return ed25519Backends.flatMap((backend): Contender[] => {
    if (backend.name === 'noble') {
      return [
        {
          name: 'core verifyBatch (noble)',
          role: 'core',
          op: () => verifyBatch(turn.block(), backend),
          setup: turn.next,
          samples: suite.quick ? 1 : 3,
          note: 'no key cache',
        },
      ];
    }
    return [
      {
        name: `core verifyBatch (${backend.name}) cold`,
        role: 'core',
        op: () => verifyBatch(cold, backend),
        setup: async () => {
          cold = f.coldPool.pop() ?? (await makeBlock());
        },
        note: 'every sample a block of keys never seen; cache full, so each also evicts one',
      },
      {
        name: `core verifyBatch (${backend.name}) warm`,
        role: 'core',
        op: () => verifyBatch(f.warm, backend),
        // Cold samples push this block's keys out of the cache: put them back untimed.
        setup: () => verifyBatch(f.warm, backend),
        note: 'same block again, keys in the cache',
      },
    ];
  });
}

/**
 * Raw WebCrypto (every key imported, and keys imported beforehand) and the host's native ways,
 * with the names of the host's candidates for the reference baseline.
 */
async function baselineBlockContenders(host: CryptoHost, f: BlockFixtures, turn: Turns): Promise<{ contenders: Contender[]; references: string[] }> {
  const contenders: Contender[] = [
    {
      name: 'WebCrypto import+verify, concurrent',
      role: 'baseline',
      op: () => webcryptoBlockVerify(turn.block()),
      setup: turn.next,
      note: 'every key imported, all in flight',
    },
  ];
  const preImported = await Promise.all(
    f.warm.map((item) => crypto.subtle.importKey('raw', item.publicKey as Uint8Array<ArrayBuffer>, ED25519, false, ['verify'])),
  );
  contenders.push({
    name: 'WebCrypto verify, keys pre-imported',
    role: 'baseline',
    op: () =>
      Promise.all(
        f.warm.map((item, i) =>
          crypto.subtle.verify(ED25519, preImported[i]!, item.signature as Uint8Array<ArrayBuffer>, item.message as Uint8Array<ArrayBuffer>),
        ),
      ),
    note: 'compare with warm',
  });
  const references: string[] = [];
  for (const native of host.nativeBlockVerify ?? []) {
    const run = native.make();
    const c: Contender = { name: native.name, role: 'baseline', op: () => run(turn.block()), setup: turn.next };
    contenders.push(native.note === undefined ? c : { ...c, note: native.note });
    if (native.reference) references.push(native.name);
  }
  return { contenders, references };
}

/** Every verifier must accept every signature of a valid block, or its figure means nothing. */
async function checkBlockVerifiers(host: CryptoHost, block: readonly SignedMessage[]): Promise<void> {
  for (const backend of ed25519Backends) {
    assertAllValid(await verifyBatch(block, backend), `core verifyBatch (${backend.name})`, BLOCK_SIGNATURES);
  }
  assertAllValid(await webcryptoBlockVerify(block), 'WebCrypto', BLOCK_SIGNATURES);
  for (const native of host.nativeBlockVerify ?? []) {
    assertAllValid(await native.make()(block), native.name, BLOCK_SIGNATURES);
  }
}

async function measureBlockVerify(suite: Suite): Promise<void> {
  const fixtures = await makeBlockFixtures(suite);
  const turn = turns(fixtures);
  const baselines = await baselineBlockContenders(suite.host, fixtures, turn);
  const contenders = [...coreBlockContenders(suite, fixtures, turn), ...baselines.contenders];
  const references = baselines.references;
  await checkBlockVerifiers(suite.host, fixtures.check);
  // A long-running node's key cache is full, so each new key also evicts the oldest: start
  // the cold samples in that steady state rather than with an empty cache.
  for (const backend of ed25519Backends) {
    if (backend.name !== 'noble') await verifyBatch(fixtures.filler, backend);
  }
  const measured = await compare(contenders, blockMeasure(suite));
  // The fastest of the host's reference candidates (raw WebCrypto where the host has none).
  const candidates = references.length > 0 ? references : ['WebCrypto import+verify, concurrent'];
  const reference = measured.filter((m) => candidates.includes(m.name)).reduce((best, m) => (m.medianNs < best.medianNs ? m : best)).name;
  suite.record({
    group: 'verify-block',
    title: `Ed25519 verify of a block: ${BLOCK_SIGNATURES.toLocaleString('en')} signatures, as many keys`,
    unit: 'sig',
    reference,
    rows: toRows(measured, reference, BLOCK_SIGNATURES),
  });
}

// ---------------------------------------------------------------------------------------------
// Plain-text tables, printed as the figures come in (web-standard, so every runtime can print).

/** Throughput of a row: MB/s for hashing, signatures/s otherwise. */
export function throughput(row: Row, unit: CaseResult['unit']): string {
  const perSecond = row.opsPerSec * row.units;
  if (unit === 'sig') return `${formatRate(perSecond)} sig/s`;
  const mb = perSecond / 1e6;
  return `${mb >= 1000 ? mb.toFixed(0) : mb.toPrecision(3)} MB/s`;
}

/** A case as an aligned text table. */
export function formatCase(c: CaseResult): string {
  const header = ['  implementation', 'median', 'ops/s', 'throughput', 'ratio', ''];
  const rows = c.rows.map((r) => [
    `  ${r.role === 'baseline' ? '·' : '▸'} ${r.name}`,
    formatDuration(r.medianNs),
    formatRate(r.opsPerSec),
    throughput(r, c.unit),
    r.name === c.reference ? '1 (ref)' : r.ratio.toFixed(2),
    r.note ?? '',
  ]);
  return `\n${c.title} (ratio: time ÷ ${c.reference})\n${textTable([header, ...rows], [false, true, true, true, true, false])}`;
}

/** The sweep as one compact table (time per hash) and the crossover lines. */
export function formatSweep(sweep: readonly CaseResult[], crossovers: readonly Crossover[]): string {
  const names = sweep[0]?.rows.map((r) => r.name) ?? [];
  const header = ['  size', ...names];
  const rows = sweep.map((c) => [`  ${formatBytes(c.bytes ?? 0)}`, ...c.rows.map((r) => formatDuration(r.medianNs))]);
  const lines = crossovers.map((x) => `  ${x.agrees ? 'ok      ' : x.actual ? 'MISMATCH' : 'what-if '} ${x.remark}`);
  return `\nSHA-256 crossover sweep (median time per hash)\n${textTable([header, ...rows], [false, ...names.map(() => true)])}\n${lines.join('\n')}`;
}
