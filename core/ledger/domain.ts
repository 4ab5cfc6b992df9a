/**
 * Domain separation: every signed or hashed structure of the chain is prefixed with a tag naming
 * what it is and the network it belongs to, so a signature for one purpose or one network is never
 * valid for another.
 */
import { concatBytes } from '../encoding/bytes.ts';

const encoder = new TextEncoder();
const prefixes = new Map<string, Uint8Array>();

/** `tag ‖ 0x00 ‖ network ‖ 0x00 ‖ payload`. */
export function domainBytes(tag: string, network: string, payload: Uint8Array): Uint8Array {
  const key = `${tag}\0${network}\0`;
  let prefix = prefixes.get(key);
  if (prefix === undefined) {
    prefix = encoder.encode(key);
    prefixes.set(key, prefix);
  }
  return concatBytes(prefix, payload);
}
