/**
 * The few pieces of the WebAssembly binary format that the modules assembled at load use
 * (core/crypto/sha256-lanes.ts, directory/bitset-simd.ts): LEB128 integers, local access, SIMD
 * opcodes, and a module's sections. Each module keeps its own instructions.
 */

/** Unsigned LEB128. */
export function uleb(n: number): number[] {
  const out: number[] = [];
  do {
    let byte = n & 0x7f;
    n >>>= 7;
    if (n !== 0) byte |= 0x80;
    out.push(byte);
  } while (n !== 0);
  return out;
}

/** Signed LEB128. */
export function sleb(n: number): number[] {
  const out: number[] = [];
  for (;;) {
    const byte = n & 0x7f;
    n >>= 7;
    if ((n === 0 && (byte & 0x40) === 0) || (n === -1 && (byte & 0x40) !== 0)) return [...out, byte];
    out.push(byte | 0x80);
  }
}

export const I32 = 0x7f;
export const V128 = 0x7b;
export const get = (local: number): number[] => [0x20, ...uleb(local)];
export const set = (local: number): number[] => [0x21, ...uleb(local)];
export const tee = (local: number): number[] => [0x22, ...uleb(local)];
/** `i32.const value`. */
export const i32 = (value: number): number[] => [0x41, ...sleb(value | 0)];
/** A SIMD instruction (prefix 0xfd) and its immediates. */
export const simd = (op: number, ...immediates: number[]): number[] => [0xfd, ...uleb(op), ...immediates];
/** `v128.load` from the address on the stack plus `offset` (16-byte alignment hint). */
export const v128Load = (offset = 0): number[] => simd(0x00, 4, ...uleb(offset));
/** `v128.store` to the address under the value on the stack, plus `offset`. */
export const v128Store = (offset = 0): number[] => simd(0x0b, 4, ...uleb(offset));

/** A section: its id, then its body's length and body. */
export const section = (id: number, body: number[]): number[] => [id, ...uleb(body.length), ...body];
/** An ASCII name, as imports and exports give them. */
export const name = (text: string): number[] => [text.length, ...[...text].map((ch) => ch.charCodeAt(0))];
/** A function's entry in the code section: its body's length and body. */
export const code = (body: number[]): number[] => [...uleb(body.length), ...body];
/** The magic number and version every module starts with. */
export const MODULE_HEADER: readonly number[] = [0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00];
