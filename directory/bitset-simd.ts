/**
 * Bit-set intersections in WebAssembly SIMD, on the memory that holds the index's bit sets.
 *
 * Why: a filtered query over a million records intersects bit sets of 31,250 words each. In
 * JavaScript the word-at-a-time loop (and, store, count) took 80–150 µs, most of a filtered
 * query's search time; sixteen bytes at a time with `i8x16.popcnt` it takes about 19 µs.
 *
 * The index's bit sets live in a shared WebAssembly memory (`newBitsetStore`), which the serving
 * threads receive as they received the SharedArrayBuffer before; each thread takes the bit sets
 * its queries make from the same memory, grown by its own pages (`scratchBits`: a shared
 * memory's `grow` is atomic, and the pages it adds belong to the thread that asked). Views of
 * that memory are known by their buffer; an intersection whose sets are all in it runs in the
 * module, any other (a bit set made elsewhere, a runtime without WebAssembly SIMD or without
 * SharedArrayBuffer) in the JavaScript loop of postings.ts, with the same result.
 *
 * The module is assembled here, at load (as core/crypto/sha256-lanes.ts is): no build step.
 */

import { code, get, I32, i32, MODULE_HEADER, name, section, set, simd, tee, uleb, V128, v128Load, v128Store } from '../core/encoding/wasm.ts';

/** What the index's bit sets are stored in: a shared WebAssembly memory where it can be, else a buffer. */
export type BitsetStore = WebAssembly.Memory | ArrayBufferLike;

const PAGE = 65536;
// Pages a memory may grow to: address space reserved for the threads' scratch bit sets, not memory used.
const SCRATCH_PAGES = 8192;

interface Kernel {
  /** Writes a ∧ b over `vectors` 16-byte vectors to out; returns the bits set. Byte offsets. */
  readonly and2: (a: number, b: number, out: number, vectors: number) => number;
  readonly and3: (a: number, b: number, c: number, out: number, vectors: number) => number;
}

// The kernel of each buffer (each grow of a shared memory gives a new buffer object).
const kernelOfBuffer = new WeakMap<ArrayBufferLike, Kernel>();
const kernelOfMemory = new WeakMap<WebAssembly.Memory, Kernel | null>();

// ---- the module -------------------------------------------------------------------------------

const [V128_AND, I8X16_POPCNT, I16X8_EXTADD_U, I32X4_EXTADD_U, I32X4_ADD, I32X4_EXTRACT] = [0x4e, 0x62, 0x7d, 0x7f, 0xae, 0x1b];
const [I32_ADD, I32_SUB, I32_EQZ] = [0x6a, 0x6b, 0x45];
const [BLOCK, LOOP, BR_IF, END, VOID] = [0x02, 0x03, 0x0d, 0x0b, 0x40];

/**
 * and<n>(set₀ … setₙ₋₁, out, vectors) → bits set: out = ∧ of the sets, 16 bytes at a time, the
 * bytes' bits counted per byte and summed into four 32-bit lanes.
 */
function andBody(sets: number): number[] {
  const out = sets;
  const vectors = sets + 1;
  const x = sets + 2; // v128
  const acc = sets + 3; // v128
  const c: number[] = [BLOCK, VOID, ...get(vectors), I32_EQZ, BR_IF, 0, LOOP, VOID];
  c.push(...get(0), ...v128Load());
  for (let s = 1; s < sets; s++) c.push(...get(s), ...v128Load(), ...simd(V128_AND));
  c.push(...set(x), ...get(out), ...get(x), ...v128Store());
  c.push(...get(acc), ...get(x), ...simd(I8X16_POPCNT), ...simd(I16X8_EXTADD_U), ...simd(I32X4_EXTADD_U), ...simd(I32X4_ADD), ...set(acc));
  for (let s = 0; s <= sets; s++) c.push(...get(s), ...i32(16), I32_ADD, ...set(s));
  c.push(...get(vectors), ...i32(1), I32_SUB, ...tee(vectors), BR_IF, 0, END, END);
  for (let lane = 0; lane < 4; lane++) c.push(...get(acc), ...simd(I32X4_EXTRACT), lane, ...(lane > 0 ? [I32_ADD] : []));
  c.push(END);
  return [1, 2, V128, ...c];
}

function moduleBytes(): Uint8Array<ArrayBuffer> {
  return Uint8Array.from([
    ...MODULE_HEADER,
    // type 0: (i32 × 4) → i32; type 1: (i32 × 5) → i32
    ...section(1, [2, 0x60, 4, I32, I32, I32, I32, 1, I32, 0x60, 5, I32, I32, I32, I32, I32, 1, I32]),
    // the memory, imported: shared, at least a page, at most 4 GB (any shared memory's maximum fits)
    ...section(2, [1, ...name('m'), ...name('memory'), 0x02, 0x03, 1, ...uleb(65536)]),
    ...section(3, [2, 0, 1]),
    ...section(7, [2, ...name('and2'), 0x00, 0, ...name('and3'), 0x00, 1]),
    ...section(10, [2, ...code(andBody(2)), ...code(andBody(3))]),
  ]);
}

// ---- memories and views -------------------------------------------------------------------------

// The module, compiled once per thread where the runtime has WebAssembly SIMD; null elsewhere.
const compiled: WebAssembly.Module | null = (() => {
  try {
    return typeof WebAssembly === 'object' ? new WebAssembly.Module(moduleBytes()) : null;
  } catch {
    return null;
  }
})();

/** True where the runtime runs the module and can share its memory between threads. */
export const SIMD_BITSETS: boolean = compiled !== null && typeof SharedArrayBuffer === 'function';

function kernelOf(memory: WebAssembly.Memory): Kernel | null {
  let kernel = kernelOfMemory.get(memory);
  if (kernel === undefined) {
    try {
      const exports = new WebAssembly.Instance(compiled!, { m: { memory } }).exports;
      kernel = { and2: exports.and2 as Kernel['and2'], and3: exports.and3 as Kernel['and3'] };
    } catch {
      kernel = null;
    }
    kernelOfMemory.set(memory, kernel);
  }
  return kernel;
}

/**
 * Room for `bytes` of bit sets: a shared WebAssembly memory with room to grow for the threads'
 * scratch sets where the runtime runs the module, else a SharedArrayBuffer, else an ArrayBuffer.
 */
export function newBitsetStore(bytes: number): BitsetStore {
  if (SIMD_BITSETS) {
    const initial = Math.max(1, Math.ceil(bytes / PAGE));
    try {
      const memory = new WebAssembly.Memory({ initial, maximum: initial + SCRATCH_PAGES, shared: true });
      if (kernelOf(memory) !== null) return memory;
    } catch {
      // No shared WebAssembly memory of that size here: a buffer, as without SIMD.
    }
  }
  return typeof SharedArrayBuffer === 'function' ? new SharedArrayBuffer(bytes) : new ArrayBuffer(bytes);
}

/** The bytes of `store` (a memory's as it is now). */
export function storeBuffer(store: BitsetStore): ArrayBufferLike {
  if (!isMemory(store)) return store;
  const buffer = store.buffer;
  const kernel = kernelOf(store);
  if (kernel !== null) kernelOfBuffer.set(buffer, kernel);
  return buffer;
}

/** True when other threads can use `store` in place (a SharedArrayBuffer or a shared memory). */
export function isSharedStore(store: BitsetStore): boolean {
  return typeof SharedArrayBuffer === 'function' && storeBuffer(store) instanceof SharedArrayBuffer;
}

function isMemory(store: BitsetStore): store is WebAssembly.Memory {
  return typeof WebAssembly === 'object' && store instanceof WebAssembly.Memory;
}

/**
 * A bit set of `words` words in `store`'s memory, on pages this thread adds to it, for a query's
 * intermediate sets; null when `store` is a plain buffer or the memory cannot grow further (the
 * caller makes a plain array).
 */
export function scratchBits(store: BitsetStore, words: number): Uint32Array | null {
  if (!isMemory(store) || kernelOf(store) === null) return null;
  let first: number;
  try {
    first = store.grow(Math.ceil((words * 4) / PAGE));
  } catch {
    return null;
  }
  return new Uint32Array(storeBuffer(store), first * PAGE, words);
}

/** The kernel that can intersect all of `sets` in place, if they are all in one kernel's memory. */
function kernelFor(a: Uint32Array, b: Uint32Array, c: Uint32Array, d?: Uint32Array): Kernel | undefined {
  const kernel = kernelOfBuffer.get(a.buffer);
  if (kernel === undefined || kernelOfBuffer.get(b.buffer) !== kernel || kernelOfBuffer.get(c.buffer) !== kernel) return undefined;
  if (d !== undefined && kernelOfBuffer.get(d.buffer) !== kernel) return undefined;
  return kernel;
}

/**
 * a ∧ b into out over their whole 16-byte vectors (all three the same length; the last
 * `length % 4` words are the caller's), with SIMD when all three are in one memory: returns the
 * bits set in the words written, or undefined (nothing written).
 */
export function and2Simd(a: Uint32Array, b: Uint32Array, out: Uint32Array): number | undefined {
  return kernelFor(a, b, out)?.and2(a.byteOffset, b.byteOffset, out.byteOffset, out.length >>> 2);
}

/** `and2Simd` of three sets. */
export function and3Simd(a: Uint32Array, b: Uint32Array, c: Uint32Array, out: Uint32Array): number | undefined {
  return kernelFor(a, b, c, out)?.and3(a.byteOffset, b.byteOffset, c.byteOffset, out.byteOffset, out.length >>> 2);
}
