/**
 * Ed25519 for the chain: one validity rule, several backends.
 *
 * The rule (docs/crypto.md has the reasoning): a signature (R, S) on message M under key A is valid
 * exactly when
 *   1. A is 32 bytes, its y-coordinate is canonical (< p) and A is not a point of small order;
 *   2. the signature is 64 bytes, R is canonical (< p) and not of small order;
 *   3. S < L (canonical scalar);
 *   4. A decodes to a curve point and the cofactorless equation holds: the encoding of
 *      [S]B − [k]A equals the bytes of R, with k = SHA-512(R ‖ A ‖ M) mod L.
 * This is libsodium's rule. Checks 1–3 are byte comparisons that the core makes before any backend
 * sees the input; check 4 is pure group arithmetic, on which every correct implementation agrees.
 * So WebCrypto (OpenSSL in Node, BoringSSL in Chromium, Deno's own) and the pure-JS backend give
 * the same answer on every input, and nodes on different runtimes cannot fork over a signature.
 */
import * as noble from '@noble/ed25519';
import { bytesEqual, bytesKey, concatBytes, ensureBytes } from '../encoding/bytes.ts';
import { fromHex } from '../encoding/hex.ts';
import { InvalidKeyError, InvalidSignatureError, MeshError } from '../errors.ts';
import { type Random, systemRandom } from './random.ts';
import { sha512 } from './sha256.ts';

export const PUBLIC_KEY_LENGTH = 32;
export const SIGNATURE_LENGTH = 64;
export const SEED_LENGTH = 32;

/** Why a signature is not valid under the chain's rule; `null` from a check means valid. */
export type SignatureRejection =
  | 'key-length'
  | 'key-non-canonical'
  | 'key-small-order'
  | 'signature-length'
  | 'r-non-canonical'
  | 'r-small-order'
  | 's-non-canonical'
  | 'mismatch';

/** A signed message as it sits in a block: key, message and signature. */
export interface SignedMessage {
  readonly publicKey: Uint8Array;
  readonly message: Uint8Array;
  readonly signature: Uint8Array;
}

/** An implementation of the arithmetic part of Ed25519 (check 4 of the rule, and signing). */
export interface Ed25519Backend {
  /** 'webcrypto' and 'noble' here; a host may hand in its own (`checkedEd25519Backend`). */
  readonly name: string;
  /** Prepares signing under a 32-byte seed; the function it gives makes RFC 8032 signatures. */
  signer(seed: Uint8Array): Promise<(message: Uint8Array) => Promise<Uint8Array>>;
  /** The group equation only. Callers apply the encoding checks first (see `checkEncodings`). */
  verifyEquation(publicKey: Uint8Array, message: Uint8Array, signature: Uint8Array): Promise<boolean>;
  /**
   * The equations of many signatures, one verdict each, in order: for a backend that hands work to
   * other threads in one piece rather than one call per signature. `verifyBatch` uses it when present.
   */
  verifyEquations?(items: readonly SignedMessage[]): Promise<boolean[]>;
}

// ---------------------------------------------------------------------------------------------
// The encoding checks (rule 1–3), on bytes only.

const P = 2n ** 255n - 19n;
const L = 2n ** 252n + 27742317777372353535851937790883648493n;

function littleEndian(value: bigint): Uint8Array {
  const out = new Uint8Array(32);
  for (let i = 0; i < 32; i++) out[i] = Number((value >> BigInt(8 * i)) & 0xffn);
  return out;
}

function fromLittleEndian(bytes: Uint8Array): bigint {
  let value = 0n;
  for (let i = bytes.length - 1; i >= 0; i--) value = (value << 8n) | BigInt(bytes[i]!);
  return value;
}

// The y-coordinates of the eight points of small order: the identity (1), the point of order 2
// (p − 1), the two of order 4 (0) and the four of order 8 (±Y8). A point is of small order exactly
// when its y is one of these, whatever its sign bit says, so comparing y rejects every encoding.
const Y8 = 0x7a03ac9277fdc74ec6cc392cfa53202a0f67100d760b3cba4fd84d3d706a17c7n;
const SMALL_ORDER_Y: readonly Uint8Array[] = [0n, 1n, P - 1n, Y8, P - Y8].map(littleEndian);
const L_BYTES = littleEndian(L);

// The checks below read the 32 bytes of `point` (or `s`) from `at`: a signature's R and S are read
// in place, with no subarray made for each of a block's thousand signatures.

/** True when the 255-bit y of a point encoding is below p (the sign bit is ignored). */
function isCanonicalY(point: Uint8Array, at = 0): boolean {
  if ((point[at + 31]! & 0x7f) !== 0x7f) return true;
  for (let i = 30; i > 0; i--) if (point[at + i] !== 0xff) return true;
  return point[at]! < 0xed;
}

// Which values byte 1 of a small-order y takes: a point whose byte 1 is none of them is not of
// small order, which settles almost every key and R at one look-up.
const SMALL_ORDER_BYTE1 = new Uint8Array(256);
for (const y of SMALL_ORDER_Y) SMALL_ORDER_BYTE1[y[1]!] = 1;

function hasSmallOrderY(point: Uint8Array, at = 0): boolean {
  if (SMALL_ORDER_BYTE1[point[at + 1]!] === 0) return false;
  outer: for (const y of SMALL_ORDER_Y) {
    if ((point[at + 31]! & 0x7f) !== y[31]) continue;
    for (let i = 30; i >= 0; i--) if (point[at + i] !== y[i]) continue outer;
    return true;
  }
  return false;
}

/** True when the little-endian scalar is below the group order L. */
function isCanonicalScalar(s: Uint8Array, at = 0): boolean {
  for (let i = 31; i >= 0; i--) {
    if (s[at + i]! < L_BYTES[i]!) return true;
    if (s[at + i]! > L_BYTES[i]!) return false;
  }
  return false; // s == L
}

function checkKeyEncoding(publicKey: Uint8Array): SignatureRejection | null {
  if (publicKey.length !== PUBLIC_KEY_LENGTH) return 'key-length';
  if (!isCanonicalY(publicKey)) return 'key-non-canonical';
  if (hasSmallOrderY(publicKey)) return 'key-small-order';
  return null;
}

/**
 * Rules 1–3 of the validity rule: lengths, canonical encodings, no small-order points, S < L.
 * Byte comparisons only, so it costs nothing next to the equation.
 */
export function checkEncodings(publicKey: Uint8Array, signature: Uint8Array): SignatureRejection | null {
  ensureBytes(publicKey, 'publicKey');
  ensureBytes(signature, 'signature');
  const keyProblem = checkKeyEncoding(publicKey);
  if (keyProblem) return keyProblem;
  if (signature.length !== SIGNATURE_LENGTH) return 'signature-length';
  if (!isCanonicalY(signature)) return 'r-non-canonical';
  if (hasSmallOrderY(signature)) return 'r-small-order';
  if (!isCanonicalScalar(signature, 32)) return 's-non-canonical';
  return null;
}

// ---------------------------------------------------------------------------------------------
// Backends.

noble.hashes.sha512 = (message) => sha512(message) as Uint8Array<ArrayBuffer>;

function decodePoint(bytes: Uint8Array): noble.Point | null {
  try {
    return noble.Point.fromBytes(bytes, false);
  } catch {
    return null; // not on the curve
  }
}

/**
 * The pure-JS backend. noble's own `verify` checks the cofactored equation, which accepts some
 * signatures with mixed-order R that the cofactorless backends reject; so the equation is written
 * here, cofactorless, on noble's audited point arithmetic.
 */
export const nobleEd25519Backend: Ed25519Backend = {
  name: 'noble',
  async signer(seed) {
    return async (message) => noble.sign(message, seed);
  },
  async verifyEquation(publicKey, message, signature) {
    const a = decodePoint(publicKey);
    const s = fromLittleEndian(signature.subarray(32));
    if (!a || s >= L) return false;
    const r = signature.subarray(0, 32);
    const k = fromLittleEndian(sha512(concatBytes(r, publicKey, message))) % L;
    const expected = noble.Point.BASE.multiply(s, false).subtract(a.multiply(k, false));
    return bytesEqual(expected.toBytes(), r);
  },
};

const ED25519 = { name: 'Ed25519' } as const;
/** PKCS #8 wrapping of a raw 32-byte Ed25519 seed (RFC 8410): this fixed header, then the seed. */
export const ED25519_PKCS8_PREFIX: Uint8Array = new Uint8Array([
  0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20,
]);

// Imported verification keys: a block's senders repeat, and importing costs about as much as a
// verification. Two generations of at most KEY_CACHE_GENERATION each: when the young one fills,
// it becomes the old one and the previous old one is dropped whole — O(1) per lookup and
// eviction, unlike deleting a Map's oldest entry one at a time. An entry holds the import in
// flight, then the key itself, so a cached key costs no extra promise turn.
type CachedKey = CryptoKey | Promise<CryptoKey>;
const KEY_CACHE_GENERATION = 4096;
let youngKeys = new Map<string, CachedKey>();
let oldKeys = new Map<string, CachedKey>();

function remember(id: string, key: CachedKey): void {
  if (youngKeys.size >= KEY_CACHE_GENERATION) {
    oldKeys = youngKeys;
    youngKeys = new Map();
  }
  youngKeys.set(id, key);
}

// The cached key (or its import in flight) under `id`, if any; a hit in the old generation moves
// to the young one.
function cachedKey(id: string): CachedKey | undefined {
  const young = youngKeys.get(id);
  if (young) return young;
  const old = oldKeys.get(id);
  if (old) remember(id, old);
  return old;
}

/** The runtime's WebCrypto Ed25519: native code, and concurrent calls spread over the cores. */
const webcryptoBackend: Ed25519Backend = {
  name: 'webcrypto',
  async signer(seed) {
    // Imported once per identity: importing costs about as much as signing.
    const key = await crypto.subtle.importKey('pkcs8', concatBytes(ED25519_PKCS8_PREFIX, seed) as Uint8Array<ArrayBuffer>, ED25519, false, ['sign']);
    return async (message) => new Uint8Array(await crypto.subtle.sign(ED25519, key, message as Uint8Array<ArrayBuffer>));
  },
  verifyEquation(publicKey, message, signature) {
    const verifyWith = (key: CryptoKey): Promise<boolean> =>
      crypto.subtle.verify(ED25519, key, signature as Uint8Array<ArrayBuffer>, message as Uint8Array<ArrayBuffer>);
    const id = bytesKey(publicKey);
    const cached = cachedKey(id);
    if (cached instanceof Promise) return cached.then(verifyWith, () => false);
    if (cached !== undefined) return verifyWith(cached);
    const importing = crypto.subtle.importKey('raw', publicKey as Uint8Array<ArrayBuffer>, ED25519, false, ['verify']);
    remember(id, importing);
    // The first verification under a key puts the key itself in the cache in the same step, so it
    // waits for nothing but the import.
    return importing.then(
      (key) => {
        if (youngKeys.get(id) === importing) youngKeys.set(id, key);
        return verifyWith(key);
      },
      () => {
        // A key the runtime refuses is not a curve point: the signature is invalid, and the
        // refusal, cheap to repeat, is not kept.
        youngKeys.delete(id);
        oldKeys.delete(id);
        return false;
      },
    );
  },
};

// RFC 8032 §7.1 test 2: used once at start-up to see whether this runtime's WebCrypto does Ed25519.
const PROBE = {
  publicKey: '3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c',
  message: '72',
  signature: '92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da' + '085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00',
};

async function webcryptoWorks(): Promise<boolean> {
  if (!globalThis.crypto?.subtle) return false;
  try {
    const key = await crypto.subtle.importKey('raw', fromHex(PROBE.publicKey) as Uint8Array<ArrayBuffer>, ED25519, false, ['verify']);
    return await crypto.subtle.verify(ED25519, key, fromHex(PROBE.signature) as Uint8Array<ArrayBuffer>, fromHex(PROBE.message) as Uint8Array<ArrayBuffer>);
  } catch {
    return false;
  }
}

/** Every backend this runtime can select, the preferred (fastest) first. */
export const ed25519Backends: readonly Ed25519Backend[] = (await webcryptoWorks()) ? [webcryptoBackend, nobleEd25519Backend] : [nobleEd25519Backend];

let chosen: Ed25519Backend = ed25519Backends[0]!;

/**
 * The backend of code given none: WebCrypto where the runtime offers Ed25519, else noble (or the
 * one `chooseDefaultEd25519Backend` chose). A host hands its own to the components it constructs
 * (the crypto port, crypto/backends.ts).
 */
export const defaultEd25519Backend: Ed25519Backend = {
  get name() {
    return chosen.name;
  },
  signer: (seed) => chosen.signer(seed),
  verifyEquation: (publicKey, message, signature) => chosen.verifyEquation(publicKey, message, signature),
};

/**
 * Makes `backend` the one code given none uses, for the rest of this process: the simulator
 * (core/sim) runs every node on one thread with noble's synchronous arithmetic, because WebCrypto
 * finishes on other threads in an order no seed decides.
 */
export function chooseDefaultEd25519Backend(backend: Ed25519Backend): void {
  chosen = backend;
}

/**
 * A host's own backend (the Node host's verifies batches on worker threads), once it has given the
 * rule's verdicts on known signatures, one by one and in a batch large enough for it to take its
 * own path. A wrong one is refused with a MeshError.
 */
export async function checkedEd25519Backend(backend: Ed25519Backend): Promise<Ed25519Backend> {
  const publicKey = fromHex(PROBE.publicKey);
  const good = { publicKey, message: fromHex(PROBE.message), signature: fromHex(PROBE.signature) };
  const forged = { ...good, message: fromHex('73') };
  const batch = Array.from({ length: PROBE_BATCH }, (_, i) => (i % 2 === 0 ? good : forged));
  const single = await Promise.all([good, forged].map((m) => backend.verifyEquation(m.publicKey, m.message, m.signature)));
  const many = await (backend.verifyEquations?.(batch) ?? Promise.resolve(batch.map((_, i) => i % 2 === 0)));
  if (single[0] !== true || single[1] !== false || many.length !== batch.length || many.some((v, i) => v !== (i % 2 === 0))) {
    throw new MeshError('ed25519-backend-wrong', `the Ed25519 backend ${backend.name} gave a wrong verdict; not used`);
  }
  return backend;
}

// Signatures in the batch `checkedEd25519Backend` checks a backend with: more than a backend may keep
// on the calling thread.
const PROBE_BATCH = 256;

// ---------------------------------------------------------------------------------------------
// The API.

/**
 * Checks a signature under the chain's rule and says why it fails.
 * @returns `null` when valid, else the rule that rejected it.
 */
export async function checkSignature(
  publicKey: Uint8Array,
  message: Uint8Array,
  signature: Uint8Array,
  backend: Ed25519Backend = defaultEd25519Backend,
): Promise<SignatureRejection | null> {
  ensureBytes(message, 'message');
  const problem = checkEncodings(publicKey, signature);
  if (problem) return problem;
  return (await backend.verifyEquation(publicKey, message, signature)) ? null : 'mismatch';
}

/** True when `signature` is valid for `message` under `publicKey` by the chain's rule. */
export async function verify(
  publicKey: Uint8Array,
  message: Uint8Array,
  signature: Uint8Array,
  backend: Ed25519Backend = defaultEd25519Backend,
): Promise<boolean> {
  return (await checkSignature(publicKey, message, signature, backend)) === null;
}

/**
 * Verifies many signatures at once (a block carries up to 1,024): the encoding checks run first,
 * then every equation is issued concurrently, so a native backend spreads them over the cores.
 * @returns one verdict per item, in order.
 */
export function verifyBatch(items: readonly SignedMessage[], backend: Ed25519Backend = defaultEd25519Backend): Promise<boolean[]> {
  if (backend.verifyEquations !== undefined) {
    // The encodings here, the equations of the rest in one hand-over.
    const verdicts = new Array<boolean>(items.length).fill(false);
    const passed: SignedMessage[] = [];
    const at: number[] = [];
    for (let i = 0; i < items.length; i++) {
      const item = items[i]!;
      ensureBytes(item.message, 'message');
      if (checkEncodings(item.publicKey, item.signature)) continue;
      passed.push(item);
      at.push(i);
    }
    return backend.verifyEquations(passed).then((equations) => {
      for (let j = 0; j < at.length; j++) verdicts[at[j]!] = equations[j] === true;
      return verdicts;
    });
  }
  return Promise.all(
    items.map((item) => {
      ensureBytes(item.message, 'message');
      if (checkEncodings(item.publicKey, item.signature)) return false;
      return backend.verifyEquation(item.publicKey, item.message, item.signature);
    }),
  );
}

/**
 * Decodes a public key as the chain accepts it: 32 bytes, canonical, not of small order and on the
 * curve. Throws InvalidKeyError naming the problem.
 */
export function parsePublicKey(bytes: Uint8Array): Uint8Array {
  ensureBytes(bytes, 'public key');
  const problem = checkKeyEncoding(bytes);
  if (problem === 'key-length') {
    throw new InvalidKeyError('length', `public key must be ${PUBLIC_KEY_LENGTH} bytes, got ${bytes.length}`);
  }
  if (problem === 'key-non-canonical') {
    throw new InvalidKeyError('non-canonical', 'public key encodes a y-coordinate not below p');
  }
  if (problem === 'key-small-order') {
    throw new InvalidKeyError('small-order', 'public key is a point of small order');
  }
  if (!decodePoint(bytes)) throw new InvalidKeyError('not-on-curve', 'public key is not a point on the curve');
  return bytes;
}

/**
 * Checks the form of a signature (length, canonical R, R not of small order, S < L) without
 * verifying it. Throws InvalidSignatureError naming the problem.
 */
export function parseSignature(bytes: Uint8Array): Uint8Array {
  ensureBytes(bytes, 'signature');
  if (bytes.length !== SIGNATURE_LENGTH) {
    throw new InvalidSignatureError('length', `signature must be ${SIGNATURE_LENGTH} bytes, got ${bytes.length}`);
  }
  const r = bytes.subarray(0, 32);
  if (!isCanonicalY(r)) throw new InvalidSignatureError('r-non-canonical', 'signature R is not canonical');
  if (hasSmallOrderY(r)) throw new InvalidSignatureError('r-small-order', 'signature R is a point of small order');
  if (!isCanonicalScalar(bytes.subarray(32))) {
    throw new InvalidSignatureError('s-non-canonical', 'signature S is not below the group order');
  }
  return bytes;
}

/**
 * An Ed25519 identity that can sign: the 32-byte seed and its public key (the NodeId).
 * The seed never leaves the object except through `exportSeed`, which only the host's backup uses.
 */
export class SigningKey {
  readonly publicKey: Uint8Array;
  readonly #seed: Uint8Array;
  readonly #backend: Ed25519Backend;
  #signer: Promise<(message: Uint8Array) => Promise<Uint8Array>> | undefined;

  private constructor(seed: Uint8Array, backend: Ed25519Backend) {
    this.#seed = seed.slice();
    this.#backend = backend;
    this.publicKey = noble.getPublicKey(this.#seed);
  }

  /** A new identity from 32 random bytes (`random` defaults to the platform's CSPRNG). */
  static generate(random: Random = systemRandom, backend: Ed25519Backend = defaultEd25519Backend): SigningKey {
    return SigningKey.fromSeed(random.bytes(SEED_LENGTH), backend);
  }

  /** The identity of a 32-byte seed. Throws InvalidKeyError for any other length. */
  static fromSeed(seed: Uint8Array, backend: Ed25519Backend = defaultEd25519Backend): SigningKey {
    ensureBytes(seed, 'seed');
    if (seed.length !== SEED_LENGTH) {
      throw new InvalidKeyError('seed-length', `seed must be ${SEED_LENGTH} bytes, got ${seed.length}`);
    }
    return new SigningKey(seed, backend);
  }

  /** The deterministic RFC 8032 signature of `message`. */
  async sign(message: Uint8Array): Promise<Uint8Array> {
    ensureBytes(message, 'message');
    this.#signer ??= this.#backend.signer(this.#seed);
    return (await this.#signer)(message);
  }

  /** A copy of the seed, for the terminal-only identity backup. */
  exportSeed(): Uint8Array {
    return this.#seed.slice();
  }
}
