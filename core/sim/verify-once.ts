/**
 * One verification per signature for the whole simulation: every simulated node checks the same
 * signatures, and each would reach the same verdict, so the first verdict is kept and reused.
 * Without it, checking each netgraph sample, signal and transaction once per node is most of a
 * run's time. A verdict is found by the signature's first bytes and then compared in full (key,
 * signature and message), which costs less than hashing them on each of the many checks; the
 * memory held is bounded (two generations, the older dropped whole).
 */
import type { Ed25519Backend } from '../crypto/ed25519.ts';
import { bytesEqual } from '../encoding/bytes.ts';

/** Verdicts a generation holds, and the bytes of keys, signatures and messages. */
const GENERATION = 1 << 17;
const GENERATION_BYTES = 32 * 2 ** 20;

interface Kept {
  readonly publicKey: Uint8Array;
  readonly message: Uint8Array;
  readonly signature: Uint8Array;
  readonly verdict: boolean;
}

type Generation = Map<number, Kept[]>;

// 30 bits of the signature's R (a hash's output in an honest signature): a small integer key.
const bucketOf = (signature: Uint8Array): number => (signature[0]! | (signature[1]! << 8) | (signature[2]! << 16) | ((signature[3]! & 0x3f) << 24)) >>> 0;

function find(generation: Generation, bucket: number, publicKey: Uint8Array, message: Uint8Array, signature: Uint8Array): Kept | undefined {
  for (const kept of generation.get(bucket) ?? []) {
    if (bytesEqual(kept.signature, signature) && bytesEqual(kept.publicKey, publicKey) && bytesEqual(kept.message, message)) return kept;
  }
  return undefined;
}

export function verifyOnce(inner: Ed25519Backend): Ed25519Backend {
  let young: Generation = new Map();
  let old: Generation = new Map();
  let youngCount = 0;
  let youngBytes = 0;
  return {
    name: `${inner.name}, verified once`,
    signer: (seed) => inner.signer(seed),
    async verifyEquation(publicKey, message, signature) {
      const bucket = bucketOf(signature);
      const known = find(young, bucket, publicKey, message, signature) ?? find(old, bucket, publicKey, message, signature);
      if (known !== undefined) return known.verdict;
      const verdict = await inner.verifyEquation(publicKey, message, signature);
      if (youngCount >= GENERATION || youngBytes >= GENERATION_BYTES) {
        old = young;
        young = new Map();
        youngCount = 0;
        youngBytes = 0;
      }
      // Copies: the caller's bytes may be views into a whole block or message.
      const kept: Kept = { publicKey: publicKey.slice(), message: message.slice(), signature: signature.slice(), verdict };
      const list = young.get(bucket);
      if (list === undefined) young.set(bucket, [kept]);
      else list.push(kept);
      youngCount++;
      youngBytes += publicKey.length + message.length + signature.length;
      return verdict;
    },
  };
}
