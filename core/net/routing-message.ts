/**
 * The mesh's rules for a peer-routing answer (docs/network.md, "Peer routing"), judged on the bytes
 * a peer sent: one length-prefixed Kademlia `Message` (libp2p's kad-dht protobuf). libp2p parses
 * the answer too; this reading only decides whether its sender broke the rules and is penalised.
 */
import { multiaddr } from '@multiformats/multiaddr';
import { PEER_LIMITS } from './peer-limits.ts';

/** An Ed25519 peer id as a multihash: identity hash (0x00) of 36 bytes, the key's protobuf header, the key. */
const ED25519_ID_PREFIX = Uint8Array.of(0x00, 0x24, 0x08, 0x01, 0x12, 0x20);
const ED25519_ID_BYTES = ED25519_ID_PREFIX.length + 32;

// Field numbers of kad-dht's `Message` and `PeerInfo` (packages/kad-dht/src/message/dht.proto).
const MESSAGE = { record: 3, closer: 8, providers: 9 } as const;
const PEER_INFO = { id: 1, multiaddrs: 2 } as const;

/** What a judged frame was: whole and within the rules, not whole yet, or the rule it broke. */
export type RoutingVerdict = { readonly kind: 'valid' } | { readonly kind: 'incomplete' } | { readonly kind: 'invalid'; readonly reason: string };

class Malformed extends Error {}

class Reader {
  readonly #bytes: Uint8Array;
  at: number;
  readonly end: number;

  constructor(bytes: Uint8Array, at = 0, end = bytes.length) {
    this.#bytes = bytes;
    this.at = at;
    this.end = end;
  }

  varint(): number {
    let value = 0;
    for (let shift = 0; shift < 49; shift += 7) {
      if (this.at >= this.end) throw new Malformed('a varint runs past the end');
      const byte = this.#bytes[this.at++]!;
      value += (byte & 0x7f) * 2 ** shift;
      if (byte < 0x80) return value;
    }
    throw new Malformed('a varint is over 7 bytes');
  }

  bytes(): Uint8Array {
    const length = this.varint();
    if (length > this.end - this.at) throw new Malformed('a field runs past the end');
    const value = this.#bytes.subarray(this.at, this.at + length);
    this.at += length;
    return value;
  }

  /** Skips a field of `wireType` it does not look at. */
  skip(wireType: number): void {
    if (wireType === 0) this.varint();
    else if (wireType === 2) this.bytes();
    else if (wireType === 1 || wireType === 5) {
      this.at += wireType === 1 ? 8 : 4;
      if (this.at > this.end) throw new Malformed('a field runs past the end');
    } else throw new Malformed(`wire type ${wireType} is not protobuf 3's`);
  }
}

function checkPeer(bytes: Uint8Array): void {
  const reader = new Reader(bytes);
  let id: Uint8Array | undefined;
  let addresses = 0;
  while (reader.at < reader.end) {
    const key = reader.varint();
    const field = Math.floor(key / 8);
    if (field === PEER_INFO.id && key % 8 === 2) id = reader.bytes();
    else if (field === PEER_INFO.multiaddrs && key % 8 === 2) {
      if (++addresses > PEER_LIMITS.routingAddresses) throw new Malformed(`a peer with more than ${PEER_LIMITS.routingAddresses} addresses`);
      const address = reader.bytes();
      try {
        multiaddr(address);
      } catch {
        throw new Malformed('an address that is not a multiaddr');
      }
    } else reader.skip(key % 8);
  }
  if (id === undefined) throw new Malformed('a peer without an id');
  const ed25519 = id.length === ED25519_ID_BYTES && ED25519_ID_PREFIX.every((b, i) => id[i] === b);
  if (!ed25519) throw new Malformed('a peer whose id is not an Ed25519 key (not a mesh node)');
}

/**
 * Judges `received`, the bytes a peer sent on a routing stream so far: one frame, `uvarint length ‖
 * Message`. An answer may list at most PEER_LIMITS.routingPeers peers (closer ones and providers
 * each), every one an Ed25519 key with at most PEER_LIMITS.routingAddresses multiaddrs, and no record.
 */
export function judgeRoutingAnswer(received: Uint8Array): RoutingVerdict {
  try {
    const prefix = new Reader(received);
    let length: number;
    try {
      length = prefix.varint();
    } catch {
      return received.length < 8 ? { kind: 'incomplete' } : { kind: 'invalid', reason: 'a length prefix over 7 bytes' };
    }
    if (length > PEER_LIMITS.routingMessageBytes) return { kind: 'invalid', reason: `a message of ${length} bytes` };
    if (received.length < prefix.at + length) return { kind: 'incomplete' };
    const reader = new Reader(received, prefix.at, prefix.at + length);
    let closer = 0;
    let providers = 0;
    while (reader.at < reader.end) {
      const key = reader.varint();
      const field = Math.floor(key / 8);
      if (field === MESSAGE.record) throw new Malformed('a record (the mesh keeps none)');
      if ((field === MESSAGE.closer || field === MESSAGE.providers) && key % 8 === 2) {
        const count = field === MESSAGE.closer ? ++closer : ++providers;
        if (count > PEER_LIMITS.routingPeers) throw new Malformed(`more than ${PEER_LIMITS.routingPeers} peers`);
        checkPeer(reader.bytes());
      } else reader.skip(key % 8);
    }
    return { kind: 'valid' };
  } catch (error) {
    if (error instanceof Malformed) return { kind: 'invalid', reason: error.message };
    throw error;
  }
}
