/**
 * Kademlia messages of the routing protocol written by hand (kad-dht's dht.proto), for tests that
 * play a peer breaking the mesh's rules: what libp2p's own encoder would never produce.
 */

function varint(value: number): number[] {
  const out: number[] = [];
  while (value >= 0x80) {
    out.push((value & 0x7f) | 0x80);
    value = Math.floor(value / 128);
  }
  out.push(value);
  return out;
}

const field = (number: number, bytes: Uint8Array): number[] => [...varint(number * 8 + 2), ...varint(bytes.length), ...bytes];

/** A `PeerInfo`: its id (a multihash) and its multiaddrs as bytes. */
export function peerInfoBytes(id: Uint8Array, addresses: readonly Uint8Array[]): Uint8Array {
  return Uint8Array.from([...field(1, id), ...addresses.flatMap((a) => field(2, a))]);
}

/** A `Message` of `type` (4 is FIND_NODE) with `key` and `closer` peers (PeerInfo bytes), unframed. */
export function routingMessage(type: number, closer: readonly Uint8Array[] = [], key?: Uint8Array): Uint8Array {
  return Uint8Array.from([0x08, type, ...(key === undefined ? [] : field(2, key)), ...closer.flatMap((p) => field(8, p))]);
}

/** `message` with its uvarint length in front, as it travels. */
export function framed(message: Uint8Array): Uint8Array {
  return Uint8Array.from([...varint(message.length), ...message]);
}

/** A peer id that is not an Ed25519 key: a SHA-256 multihash, as an RSA key's id is. */
export const NOT_ED25519_ID = Uint8Array.from([0x12, 0x20, ...new Uint8Array(32).fill(7)]);
