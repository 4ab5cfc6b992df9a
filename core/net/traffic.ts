/**
 * The bytes a node sends, by what they carry: each gossip topic by its name, `rpc <name>` for a
 * request protocol, `ping`, and `gossipsub-control` for gossipsub's own frames (GRAFT, PRUNE,
 * IHAVE, IWANT, subscriptions). These are the kinds `mesh sim` counts (docs/sim.md "Figures"), so
 * a real node's counts and the simulator's compare one to one (`mesh bench sim-check`). Counted
 * is what the node writes on its streams, framing and protocol negotiation included; the
 * transport's own (noise, yamux) is not.
 */

/** The kind gossipsub's own frames are counted under. */
export const CONTROL_KIND = 'gossipsub-control';

/** The kind of a request protocol's bytes, from its name (`sync.blocks`) or its id (`/mesh/rpc/1/sync.blocks`). */
export function rpcKind(protocol: string): string {
  return `rpc ${protocol.slice(protocol.lastIndexOf('/') + 1)}`;
}

/** Bytes of `n` as an unsigned varint (protobuf's, and the length prefix of every libp2p frame). */
export function varintBytes(n: number): number {
  let bytes = 1;
  while (n >= 128) {
    n = Math.floor(n / 128);
    bytes++;
  }
  return bytes;
}

/** A length-prefixed line of multistream-select: the protocol's name and a newline. */
const lineBytes = (text: string): number => varintBytes(text.length + 1) + text.length + 1;

/**
 * What each end of a new stream sends to agree on `protocolId` (multistream-select: its own
 * version's line, then the protocol's; the listener echoes both). Every request and ping opens one.
 */
export function negotiationBytes(protocolId: string): number {
  return lineBytes('/multistream/1.0.0') + lineBytes(protocolId);
}

/** Bytes of a length-delimited protobuf field (tag below 16) holding `length` bytes. */
const fieldBytes = (length: number): number => 1 + varintBytes(length) + length;

/**
 * Splits one length-prefixed gossipsub RPC of `encodedBytes` among what it carries: each message
 * to its topic (the message as encoded, with its field's tag and length), and the rest (control,
 * subscriptions, the length prefix) to gossipsub-control.
 */
export function gossipRpcKinds(encodedBytes: number, messages: readonly { readonly topic: string; readonly encodedBytes: number }[]): [string, number][] {
  const kinds = new Map<string, number>();
  let rest = varintBytes(encodedBytes) + encodedBytes;
  for (const m of messages) {
    const bytes = fieldBytes(m.encodedBytes);
    kinds.set(m.topic, (kinds.get(m.topic) ?? 0) + bytes);
    rest -= bytes;
  }
  return [...kinds, [CONTROL_KIND, rest]];
}

/** Bytes sent so far by kind. */
export class TrafficCounter {
  readonly #sent = new Map<string, number>();

  count(kind: string, bytes: number): void {
    this.#sent.set(kind, (this.#sent.get(kind) ?? 0) + bytes);
  }

  /** The counts so far, by kind in code-point order. */
  sent(): Record<string, number> {
    return Object.fromEntries([...this.#sent].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  }
}

/** GET /traffic: what a node's network counted. */
export interface TrafficService {
  traffic(): Record<string, number>;
}
