/**
 * Domain separation: every signed or hashed structure of the chain is prefixed with a tag naming
 * what it is and the network it belongs to, so a signature for one purpose or one network is never
 * valid for another.
 */
import type { ByteArena } from '../encoding/bytes.ts';

const encoder = new TextEncoder();
// Prefixes by tag, then network: looked up without building the prefix's text each time.
const prefixes = new Map<string, Map<string, Uint8Array>>();

/** `tag ‖ 0x00 ‖ network ‖ 0x00 ‖ payload`, from `arena` if given. */
export function domainBytes(tag: string, network: string, payload: Uint8Array, arena?: ByteArena): Uint8Array {
  let byNetwork = prefixes.get(tag);
  if (byNetwork === undefined) prefixes.set(tag, (byNetwork = new Map()));
  let prefix = byNetwork.get(network);
  if (prefix === undefined) byNetwork.set(network, (prefix = encoder.encode(`${tag}\0${network}\0`)));
  const out = arena?.take(prefix.length + payload.length) ?? new Uint8Array(prefix.length + payload.length);
  out.set(prefix);
  out.set(payload, prefix.length);
  return out;
}
