/**
 * SHA-256 of many small messages, four at a time in the lanes of WebAssembly SIMD (FIPS 180-4,
 * section 6.2, each 32-bit word of the algorithm a lane of a 128-bit vector).
 *
 * Why: a state root hashes thousands of 65- and 66-byte trie nodes. One call per message costs
 * more in the call than in the hashing, whether the hasher is node:crypto's (about 0.7 µs a call
 * for 0.1 µs of hashing) or a WebAssembly one behind its JavaScript wrapper; four messages per
 * compression share every instruction.
 *
 * The module is assembled here, at load, from the algorithm below (no build step, no binary
 * checked in). JavaScript pads the messages into the module's memory; `hash4` then hashes four of
 * them, each lane running its own message's blocks (a lane whose message has fewer blocks keeps
 * its state once done).
 */
import { code, get, I32, i32, MODULE_HEADER, name, section, set, simd, tee, uleb, V128, v128Load } from '../encoding/wasm.ts';

// Round constants and initial hash value (FIPS 180-4, 4.2.2 and 5.3.3).
const K = [
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74,
  0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d,
  0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e,
  0x92722c85, 0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5,
  0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
];
const IV = [0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19];

// ---- a minimal WebAssembly assembler: just what `hash4` uses ---------------------------------

const i32Load = (offset: number): number[] => [0x28, 2, ...uleb(offset)];
const [I32_ADD, I32_SHL, I32_LT_U, I32_LE_U, I32_GT_U, SELECT] = [0x6a, 0x74, 0x49, 0x4d, 0x4b, 0x1b];
const v128Const = (lanes: readonly number[]): number[] => simd(0x0c, ...lanes.flatMap((w) => [w & 0xff, (w >>> 8) & 0xff, (w >>> 16) & 0xff, w >>> 24]));
const splat = (word: number): number[] => v128Const([word, word, word, word]);
const load32Zero = (offset: number): number[] => simd(0x5c, 2, ...uleb(offset));
const load32Lane = (offset: number, lane: number): number[] => simd(0x56, 2, ...uleb(offset), lane);
const store32Lane = (offset: number, lane: number): number[] => simd(0x5a, 2, ...uleb(offset), lane);
// Reverses the bytes of each 32-bit lane: SHA-256 words are big-endian, WebAssembly little-endian.
const byteSwap = (): number[] => simd(0x0d, 3, 2, 1, 0, 7, 6, 5, 4, 11, 10, 9, 8, 15, 14, 13, 12);
const [AND_OR_XOR_BITSELECT, OR, XOR] = [0x52, 0x50, 0x51];
const [SHL, SHR_U, ADD, LT_S, SPLAT] = [0xab, 0xad, 0xae, 0x39, 0x11];

// Locals of `hash4(desc, out)`: i32s, then v128s.
const DESC = 0;
const OUT = 1;
const P = 2; // 4: each lane's first block
const M = 6; // 4: each lane's block count − 1
const MAX_M = 10;
const BLOCK = 11;
const Q = 12; // 4: each lane's current block
const I32_LOCALS = 14;
const H = 16; // 8: the hash state
const WORK = 24; // 8: a..h
const W = 32; // 16: the message schedule, a window of 16 words
const T1 = 48;
const T2 = 49;
const COUNTS = 50;
const MASK = 51;
const V128_LOCALS = 36;

const rotr = (x: number, n: number): number[] => [...get(x), ...i32(n), ...simd(SHR_U), ...get(x), ...i32(32 - n), ...simd(SHL), ...simd(OR)];
const shr = (x: number, n: number): number[] => [...get(x), ...i32(n), ...simd(SHR_U)];
const xor3 = (a: number[], b: number[], c: number[]): number[] => [...a, ...b, ...simd(XOR), ...c, ...simd(XOR)];
const add = (): number[] => simd(ADD);

// hash4(desc, out): desc holds four i32 block addresses, then the four block counts; the four
// digests go to out, 32 bytes apart.
function hash4Body(): number[] {
  const c: number[] = [];
  for (let l = 0; l < 4; l++) {
    c.push(...get(DESC), ...i32Load(4 * l), ...set(P + l));
    c.push(...get(DESC), ...i32Load(16 + 4 * l), ...i32(1), ...[0x6b], ...set(M + l)); // i32.sub
  }
  c.push(...get(DESC), ...v128Load(16), ...set(COUNTS));
  c.push(...get(M), ...set(MAX_M));
  for (let l = 1; l < 4; l++) c.push(...get(M + l), ...get(MAX_M), ...get(M + l), ...get(MAX_M), I32_GT_U, SELECT, ...set(MAX_M));
  for (let i = 0; i < 8; i++) c.push(...splat(IV[i]!), ...set(H + i));
  c.push(...i32(0), ...set(BLOCK));
  c.push(0x03, 0x40); // loop over blocks
  // Each lane's block: its own, or its last again once its message is done (the result is dropped).
  for (let l = 0; l < 4; l++) {
    c.push(...get(P + l), ...get(BLOCK), ...get(M + l), ...get(BLOCK), ...get(M + l), I32_LT_U, SELECT, ...i32(6), I32_SHL, I32_ADD, ...set(Q + l));
  }
  for (let t = 0; t < 16; t++) {
    c.push(...get(Q), ...load32Zero(4 * t), ...set(W + t));
    for (let l = 1; l < 4; l++) c.push(...get(Q + l), ...get(W + t), ...load32Lane(4 * t, l), ...set(W + t));
    c.push(...get(W + t), ...get(W + t), ...byteSwap(), ...set(W + t));
  }
  for (let i = 0; i < 8; i++) c.push(...get(H + i), ...set(WORK + i));
  // v[0..7] name the locals holding a..h this round; the rounds rotate the names, not the values.
  const v = [0, 1, 2, 3, 4, 5, 6, 7].map((i) => WORK + i);
  for (let t = 0; t < 64; t++) {
    const w = W + (t & 15);
    if (t >= 16) {
      const w2 = W + ((t - 2) & 15);
      const w15 = W + ((t - 15) & 15);
      c.push(...xor3(rotr(w2, 17), rotr(w2, 19), shr(w2, 10)), ...get(W + ((t - 7) & 15)), ...add());
      c.push(...xor3(rotr(w15, 7), rotr(w15, 18), shr(w15, 3)), ...add(), ...get(w), ...add(), ...set(w));
    }
    const [a, b, cc, d, e, f, g, h] = v as [number, number, number, number, number, number, number, number];
    // T1 = h + Σ1(e) + Ch(e, f, g) + K[t] + W[t]; Ch is a bit select of f and g by e.
    c.push(...get(h), ...xor3(rotr(e, 6), rotr(e, 11), rotr(e, 25)), ...add());
    c.push(...get(f), ...get(g), ...get(e), ...simd(AND_OR_XOR_BITSELECT), ...add(), ...splat(K[t]!), ...add(), ...get(w), ...add(), ...set(T1));
    // T2 = Σ0(a) + Maj(a, b, c); Maj is c where a and b differ, else a.
    c.push(...xor3(rotr(a, 2), rotr(a, 13), rotr(a, 22)));
    c.push(...get(cc), ...get(a), ...get(a), ...get(b), ...simd(XOR), ...simd(AND_OR_XOR_BITSELECT), ...add(), ...set(T2));
    c.push(...get(d), ...get(T1), ...add(), ...set(d)); // the new e
    c.push(...get(T1), ...get(T2), ...add(), ...set(h)); // the new a
    v.splice(0, 8, h, a, b, cc, d, e, f, g);
  }
  // Lanes still within their message take the block's result; the others keep their state.
  c.push(...get(BLOCK), ...simd(SPLAT), ...get(COUNTS), ...simd(LT_S), ...set(MASK));
  for (let i = 0; i < 8; i++) {
    c.push(...get(H + i), ...get(v[i]!), ...add(), ...get(H + i), ...get(MASK), ...simd(AND_OR_XOR_BITSELECT), ...set(H + i));
  }
  c.push(...get(BLOCK), ...i32(1), I32_ADD, ...tee(BLOCK), ...get(MAX_M), I32_LE_U, 0x0d, 0, 0x0b); // br_if loop; end
  for (let i = 0; i < 8; i++) {
    c.push(...get(H + i), ...get(H + i), ...byteSwap(), ...set(H + i));
    for (let l = 0; l < 4; l++) c.push(...get(OUT), ...get(H + i), ...store32Lane(32 * l + 4 * i, l));
  }
  c.push(0x0b);
  const locals = [2, ...uleb(I32_LOCALS), I32, ...uleb(V128_LOCALS), V128];
  return [...locals, ...c];
}

// layout(ends, count, input, padded, desc): copies the `count` messages of the input (message i
// ends at the i32 at ends + 4 i) to `padded`, each padded to whole blocks (FIPS 180-4, 5.1.1: 0x80,
// zeros, its length in bits as 64 bits big-endian), and writes each one's descriptor for `hash4`.
function layoutBody(): number[] {
  const [ENDS, COUNT, INPUT, PADDED, DESCS] = [0, 1, 2, 3, 4];
  const [I, START, END, LENGTH, BLOCKS, TAIL, DESC] = [5, 6, 7, 8, 9, 10, 11];
  const store8 = (offset: number): number[] => [0x3a, 0, ...uleb(offset)];
  const store = (offset: number): number[] => [0x36, 2, ...uleb(offset)];
  const memoryCopy = [0xfc, ...uleb(10), 0, 0];
  const memoryFill = [0xfc, ...uleb(11), 0];
  const [I32_SUB, I32_SHR_U, I32_AND, I32_MUL] = [0x6b, 0x76, 0x71, 0x6c];
  const c: number[] = [];
  c.push(...i32(0), ...set(I), ...i32(0), ...set(START));
  c.push(0x03, 0x40); // loop over messages
  c.push(...get(ENDS), ...get(I), ...i32(2), I32_SHL, I32_ADD, ...i32Load(0), ...set(END));
  c.push(...get(END), ...get(START), I32_SUB, ...set(LENGTH));
  c.push(...get(LENGTH), ...i32(72), I32_ADD, ...i32(6), I32_SHR_U, ...set(BLOCKS));
  c.push(...get(PADDED), ...get(INPUT), ...get(START), I32_ADD, ...get(LENGTH), ...memoryCopy);
  c.push(...get(PADDED), ...get(LENGTH), I32_ADD, ...i32(0x80), ...store8(0));
  c.push(...get(PADDED), ...get(BLOCKS), ...i32(6), I32_SHL, I32_ADD, ...set(TAIL));
  // Zeros from after the 0x80 up to the length's low five bytes (the three above them stay zero).
  c.push(...get(PADDED), ...get(LENGTH), I32_ADD, ...i32(1), I32_ADD, ...i32(0));
  c.push(...get(TAIL), ...i32(5), I32_SUB, ...get(PADDED), ...get(LENGTH), I32_ADD, ...i32(1), I32_ADD, I32_SUB, ...memoryFill);
  // TAIL − 5 … TAIL − 1: bits 39…0 of length × 8 (store8 keeps the low byte).
  const lengthByte = (at: number, shift: number, left: boolean): number[] => [
    ...get(TAIL),
    ...i32(at),
    I32_SUB,
    ...get(LENGTH),
    ...i32(shift),
    left ? I32_SHL : I32_SHR_U,
    ...store8(0),
  ];
  c.push(...lengthByte(5, 29, false), ...lengthByte(4, 21, false), ...lengthByte(3, 13, false), ...lengthByte(2, 5, false), ...lengthByte(1, 3, true));
  // Descriptor of message i: group i / 4, lane i % 4.
  c.push(
    ...get(DESCS),
    ...get(I),
    ...i32(2),
    I32_SHR_U,
    ...i32(32),
    I32_MUL,
    I32_ADD,
    ...get(I),
    ...i32(3),
    I32_AND,
    ...i32(2),
    I32_SHL,
    I32_ADD,
    ...set(DESC),
  );
  c.push(...get(DESC), ...get(PADDED), ...store(0), ...get(DESC), ...get(BLOCKS), ...store(16));
  c.push(...get(TAIL), ...set(PADDED), ...get(END), ...set(START));
  c.push(...get(I), ...i32(1), I32_ADD, ...tee(I), ...get(COUNT), I32_LT_U, 0x0d, 0, 0x0b); // br_if loop; end
  c.push(0x0b);
  return [1, 7, I32, ...c];
}

function moduleBytes(): Uint8Array {
  return Uint8Array.from([
    ...MODULE_HEADER,
    // type 0: (i32, i32) → (); type 1: (i32 × 5) → ()
    ...section(1, [2, 0x60, 2, I32, I32, 0, 0x60, 5, I32, I32, I32, I32, I32, 0]),
    ...section(3, [2, 0, 1]), // hash4: type 0, layout: type 1
    ...section(5, [1, 0x00, 1]), // one memory, at least a page
    ...section(7, [3, ...name('hash4'), 0x00, 0, ...name('layout'), 0x00, 1, ...name('memory'), 0x02, 0]),
    ...section(10, [2, ...code(hash4Body()), ...code(layoutBody())]),
  ]);
}

// ---- the batch ---------------------------------------------------------------------------

const PAGE = 65536;

/**
 * Hashes many messages in one call: message i is `data[ends[i - 1] ?? 0, ends[i])`, and its digest
 * is written to `out[32 i, 32 i + 32)`. See `sha256Batch`.
 */
export type Sha256Batch = (data: Uint8Array, ends: ArrayLike<number>, out: Uint8Array) => void;

/**
 * A `Sha256Batch` hashing four messages at a time with WebAssembly SIMD, or null where the
 * runtime has no WebAssembly SIMD (the caller keeps its one-message hasher).
 */
export async function createLanesBatch(): Promise<Sha256Batch | null> {
  let instance: WebAssembly.Instance;
  try {
    instance = await WebAssembly.instantiate(await WebAssembly.compile(moduleBytes() as Uint8Array<ArrayBuffer>));
  } catch {
    return null;
  }
  const memory = instance.exports.memory as WebAssembly.Memory;
  const hash4 = instance.exports.hash4 as (desc: number, out: number) => void;
  const layout = instance.exports.layout as (ends: number, count: number, input: number, padded: number, desc: number) => void;
  let bytes = new Uint8Array(memory.buffer);
  let words = new Int32Array(memory.buffer);

  return (data, ends, out) => {
    const count = ends.length;
    if (count === 0) return;
    const groups = (count + 3) >> 2;
    const last = ends[count - 1]!;
    // Memory: a descriptor per group (8 words), the digests, the ends, the input, then the padded
    // messages (at most 72 bytes longer each).
    const descAt = 0;
    const digestsAt = 32 * groups;
    const endsAt = digestsAt + 128 * groups;
    const inputAt = endsAt + 4 * count;
    const paddedAt = inputAt + last + (-(inputAt + last) & 63);
    const needed = paddedAt + last + 72 * count;
    if (needed > bytes.length) {
      memory.grow(Math.ceil((needed - bytes.length) / PAGE));
      bytes = new Uint8Array(memory.buffer);
      words = new Int32Array(memory.buffer);
    }
    words.set(ends, endsAt >> 2);
    bytes.set(last === data.length ? data : data.subarray(0, last), inputAt);
    layout(endsAt, count, inputAt, paddedAt, descAt);
    // The last group's empty lanes hash its first message again, into digests nobody reads.
    for (let i = count; i < 4 * groups; i++) {
      const desc = (descAt >> 2) + 8 * (i >> 2) + (i & 3);
      words[desc] = words[desc - (i & 3)]!;
      words[desc + 4] = words[desc + 4 - (i & 3)]!;
    }
    for (let g = 0; g < groups; g++) hash4(descAt + 32 * g, digestsAt + 128 * g);
    out.set(bytes.subarray(digestsAt, digestsAt + 32 * count));
  };
}
