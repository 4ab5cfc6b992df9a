/**
 * The network port on libp2p 3: TCP and WebSockets listeners, noise, yamux, identify, ping,
 * gossipsub on the spec's topics, bootstrap peers, and a circuit-relay v2 server so browsers can
 * reach the mesh through this host.
 *
 * The node's Ed25519 key is its libp2p key, so the peer id a connection authenticates is the NodeId
 * (non-Ed25519 peers are refused). Gossip is signed by its publisher (StrictSign), so a message's
 * origin is authenticated too. Every message goes through the core's handler before gossip forwards
 * it; a peer that keeps sending what the core rejects is disconnected and banned for a while.
 */
import { noise } from '@chainsafe/libp2p-noise';
import { yamux } from '@chainsafe/libp2p-yamux';
import { bootstrap } from '@libp2p/bootstrap';
import { circuitRelayServer } from '@libp2p/circuit-relay-v2';
import { generateKeyPairFromSeed, publicKeyFromRaw } from '@libp2p/crypto/keys';
import { gossipsub, TopicValidatorResult, type GossipSub } from '@libp2p/gossipsub';
import { identify } from '@libp2p/identify';
import type { Libp2p, PeerId } from '@libp2p/interface';
import { peerIdFromPublicKey, peerIdFromString } from '@libp2p/peer-id';
import { ping } from '@libp2p/ping';
import { tcp } from '@libp2p/tcp';
import { webSockets } from '@libp2p/websockets';
import { multiaddr, type Multiaddr } from '@multiformats/multiaddr';
import { createLibp2p } from 'libp2p';
import type { SigningKey } from '../core/crypto/ed25519.ts';
import { TOPICS, type GossipMessage, type Network, type Topic, type Verdict } from '../core/net/network.ts';

export interface P2POptions {
  readonly key: SigningKey;
  /** TCP port (0 picks one); WebSockets listen on the next port (or also a free one for 0). */
  readonly port: number;
  /** Address to listen on (default all interfaces). */
  readonly listenHost?: string;
  /** Multiaddrs with /p2p/<peer id> to join through; kept connected. */
  readonly bootstrap: readonly string[];
  readonly log?: (line: string) => void;
  /** Misbehaviour points before a peer is banned (a rejected message is 1, a failed sync answer 5). */
  readonly banThreshold?: number;
  readonly banMs?: number;
}

type Services = { identify: ReturnType<ReturnType<typeof identify>>; pubsub: GossipSub };

const VERDICTS: Record<Verdict, TopicValidatorResult> = {
  accept: TopicValidatorResult.Accept,
  ignore: TopicValidatorResult.Ignore,
  reject: TopicValidatorResult.Reject,
};
const RECONNECT_MS = 3_000;

/** A bootstrap multiaddr must name its peer: `/ip4/…/tcp/…/p2p/<peer id>`. */
export function parseBootstrapAddress(text: string): Multiaddr {
  const ma = multiaddr(text);
  const id = ma.getComponents().findLast((c) => c.name === 'p2p')?.value;
  if (id === undefined) throw new RangeError(`bootstrap address ${text} has no /p2p/<peer id>`);
  const peer = peerIdFromString(id);
  if (peer.type !== 'Ed25519') throw new RangeError(`bootstrap address ${text} does not name an Ed25519 peer`);
  return ma;
}

function nodeIdOf(peer: PeerId): Uint8Array | null {
  return peer.type === 'Ed25519' ? peer.publicKey.raw : null;
}

export class P2PNetwork implements Network {
  readonly self: Uint8Array;
  readonly libp2p: Libp2p<Services>;
  readonly #log: (line: string) => void;
  readonly #bootstrap: Multiaddr[];
  readonly #joined = new Set<(peer: Uint8Array) => void>();
  readonly #points = new Map<string, number>();
  readonly #banned = new Map<string, number>();
  readonly #listenAddrs = new Map<string, Multiaddr[]>();
  readonly #banThreshold: number;
  readonly #banMs: number;
  #reconnect: ReturnType<typeof setInterval> | undefined;

  private constructor(libp2p: Libp2p<Services>, options: P2POptions, bootstrapAddrs: Multiaddr[]) {
    this.libp2p = libp2p;
    this.self = options.key.publicKey;
    this.#log = options.log ?? (() => {});
    this.#bootstrap = bootstrapAddrs;
    this.#banThreshold = options.banThreshold ?? 10;
    this.#banMs = options.banMs ?? 10 * 60_000;
  }

  static async start(options: P2POptions): Promise<P2PNetwork> {
    const bootstrapAddrs = options.bootstrap.map(parseBootstrapAddress);
    const privateKey = await generateKeyPairFromSeed('Ed25519', options.key.exportSeed());
    const host = options.listenHost ?? '0.0.0.0';
    const wsPort = options.port === 0 ? 0 : options.port + 1;
    let net: P2PNetwork | undefined;
    const banned = (peer: PeerId): boolean => net?.isBanned(peer) ?? false;
    const libp2p = await createLibp2p({
      privateKey,
      addresses: { listen: [`/ip4/${host}/tcp/${options.port}`, `/ip4/${host}/tcp/${wsPort}/ws`] },
      transports: [tcp(), webSockets()],
      connectionEncrypters: [noise()],
      streamMuxers: [yamux()],
      connectionGater: {
        // A NodeId is an Ed25519 key: other key types cannot be mesh nodes.
        denyInboundEncryptedConnection: (peer) => peer.type !== 'Ed25519' || banned(peer),
        denyOutboundEncryptedConnection: (peer) => peer.type !== 'Ed25519' || banned(peer),
        denyDialPeer: (peer) => banned(peer),
        // Loopback and private addresses are how a devnet and a LAN mesh reach each other.
        denyDialMultiaddr: () => false,
      },
      peerDiscovery: bootstrapAddrs.length > 0 ? [bootstrap({ list: bootstrapAddrs.map(String), timeout: 100 })] : [],
      services: {
        identify: identify(),
        ping: ping(),
        pubsub: gossipsub({ allowPublishToZeroTopicPeers: true, emitSelf: false, fallbackToFloodsub: false }),
        relay: circuitRelayServer(),
      },
    });
    net = new P2PNetwork(libp2p as unknown as Libp2p<Services>, options, bootstrapAddrs);
    net.#wire();
    return net;
  }

  #wire(): void {
    const pubsub = this.libp2p.services.pubsub;
    pubsub.addEventListener('subscription-change', (event) => {
      const joined = event.detail.subscriptions.some((s) => s.subscribe && s.topic === TOPICS.heights);
      const node = nodeIdOf(event.detail.peerId);
      if (!joined || node === null) return;
      for (const listener of this.#joined) listener(node);
    });
    this.libp2p.addEventListener('peer:identify', (event) => {
      this.#listenAddrs.set(event.detail.peerId.toString(), event.detail.listenAddrs);
    });
    this.libp2p.addEventListener('peer:disconnect', (event) => {
      this.#listenAddrs.delete(event.detail.toString());
    });
    this.#reconnect = setInterval(() => void this.#keepBootstrapped(), RECONNECT_MS);
  }

  // Bootstrap peers are dialled again whenever the connection is gone (a restart on either side).
  async #keepBootstrapped(): Promise<void> {
    const connected = new Set(this.libp2p.getPeers().map(String));
    for (const ma of this.#bootstrap) {
      const id = ma.getComponents().findLast((c) => c.name === 'p2p')?.value;
      if (id === undefined || connected.has(id)) continue;
      try {
        await this.libp2p.dial(ma, { signal: AbortSignal.timeout(RECONNECT_MS) });
      } catch {
        // Still down; tried again next round.
      }
    }
  }

  isBanned(peer: PeerId): boolean {
    const key = peer.toString();
    const until = this.#banned.get(key);
    if (until === undefined) return false;
    if (Date.now() < until) return true;
    this.#banned.delete(key);
    return false;
  }

  async publish(topic: Topic, data: Uint8Array): Promise<void> {
    await this.libp2p.services.pubsub.publish(topic, data);
  }

  handle(topic: Topic, handler: (message: GossipMessage) => Promise<Verdict>): void {
    const pubsub = this.libp2p.services.pubsub;
    pubsub.topicValidators.set(topic, async (peer, message) => {
      const from = message.type === 'signed' ? nodeIdOf(message.from) : null;
      const via = nodeIdOf(peer);
      if (from === null || via === null) return TopicValidatorResult.Reject;
      let verdict: Verdict;
      try {
        verdict = await handler({ topic, data: message.data, origin: from, peer: via });
      } catch (error) {
        this.#log(`gossip: ${topic} handler failed: ${error instanceof Error ? error.message : String(error)}`);
        verdict = 'ignore';
      }
      if (verdict === 'reject') this.#misbehaved(peer, 1, `invalid ${topic} message`);
      return VERDICTS[verdict];
    });
    pubsub.subscribe(topic);
  }

  onPeerJoined(listener: (peer: Uint8Array) => void): () => void {
    this.#joined.add(listener);
    return () => this.#joined.delete(listener);
  }

  penalise(node: Uint8Array, reason: string): void {
    this.#misbehaved(peerIdFromPublicKey(publicKeyFromRaw(node)), 5, reason);
  }

  #misbehaved(peer: PeerId, points: number, reason: string): void {
    const key = peer.toString();
    const total = (this.#points.get(key) ?? 0) + points;
    this.#points.set(key, total);
    if (this.#points.size > 4_096) this.#points.delete(this.#points.keys().next().value!);
    if (total < this.#banThreshold) return;
    this.#points.delete(key);
    this.#banned.set(key, Date.now() + this.#banMs);
    this.#log(`p2p: banning ${key} for ${Math.round(this.#banMs / 1000)} s (${reason})`);
    void this.libp2p.hangUp(peer).catch(() => {});
  }

  peers(): Uint8Array[] {
    return this.libp2p.getPeers().flatMap((p) => nodeIdOf(p) ?? []);
  }

  bootstrapAddresses(): string[] {
    const own = this.libp2p.getMultiaddrs().map(String);
    const theirs: string[] = [];
    for (const peer of this.libp2p.getPeers()) {
      const id = peer.toString();
      for (const ma of this.#listenAddrs.get(id) ?? []) {
        const text = ma.toString();
        theirs.push(text.includes('/p2p/') ? text : `${text}/p2p/${id}`);
      }
    }
    return [...new Set([...own, ...theirs])];
  }

  /** Own multiaddrs (with the peer id), as printed at start. */
  addresses(): string[] {
    return this.libp2p.getMultiaddrs().map(String);
  }

  async stop(): Promise<void> {
    clearInterval(this.#reconnect);
    await this.libp2p.stop();
  }
}
