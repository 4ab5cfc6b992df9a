import type { Sha256Hasher } from './sha256.ts';

/**
 * `inner`, counting the messages it hashes (a batch counts each of its messages): `hashed()` so far,
 * `count(work)` by `work`. Counting costs an increment per call, so what is measured through it is
 * timed through it as well.
 */
export function countingSha256(inner: Sha256Hasher): { readonly hasher: Sha256Hasher; hashed(): number; count(work: () => void): number } {
  let hashed = 0;
  const hasher: Sha256Hasher = {
    name: inner.name,
    hash: (data) => {
      hashed++;
      return inner.hash(data);
    },
    batch: (data, ends, out) => {
      hashed += ends.length;
      inner.batch(data, ends, out);
    },
  };
  return {
    hasher,
    hashed: () => hashed,
    count(work) {
      const before = hashed;
      work();
      return hashed - before;
    },
  };
}
