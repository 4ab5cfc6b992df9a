/**
 * The source of randomness port: the core draws random bytes (request ids, seeds) only from a
 * Random it is given, so tests can make them repeatable; hosts pass `systemRandom`.
 */

export interface Random {
  /** `length` random bytes. */
  bytes(length: number): Uint8Array;
}

// crypto.getRandomValues fills at most 65,536 bytes per call.
const MAX_PER_CALL = 65_536;

/** The platform's CSPRNG (`crypto.getRandomValues`). */
export const systemRandom: Random = {
  bytes(length) {
    const out = new Uint8Array(length);
    for (let i = 0; i < length; i += MAX_PER_CALL) crypto.getRandomValues(out.subarray(i, Math.min(length, i + MAX_PER_CALL)));
    return out;
  },
};
