/**
 * One verification per signature for the whole simulation: every simulated node checks the same
 * signatures, and each would reach the same verdict, so the first verdict is kept and reused.
 * Without it, checking each netgraph sample, signal and transaction once per node is most of a
 * run's time. The verdicts are keyed by a hash of key, signature and message, and the memory held
 * is bounded (two generations, the older dropped whole).
 */
import type { Ed25519Backend } from '../crypto/ed25519.ts';
import { sha256 } from '../crypto/sha256.ts';
import { concatBytes } from '../encoding/bytes.ts';
import { toHex } from '../encoding/hex.ts';

const GENERATION = 1 << 17;

export function verifyOnce(inner: Ed25519Backend): Ed25519Backend {
  let young = new Map<string, boolean>();
  let old = new Map<string, boolean>();
  return {
    name: `${inner.name}, verified once`,
    signer: (seed) => inner.signer(seed),
    async verifyEquation(publicKey, message, signature) {
      const key = toHex(sha256(concatBytes(publicKey, signature, message)));
      const known = young.get(key) ?? old.get(key);
      if (known !== undefined) return known;
      const verdict = await inner.verifyEquation(publicKey, message, signature);
      if (young.size >= GENERATION) {
        old = young;
        young = new Map();
      }
      young.set(key, verdict);
      return verdict;
    },
  };
}
