/**
 * The Node host's libp2p: TCP and WebSockets listeners, a circuit-relay v2 server so browsers and
 * nodes behind NATs can be reached through this host (within RelayLimits), the dial-back check of
 * its own reachability and, while it is not reachable, reservations on relays (docs/network.md,
 * "Through NATs"), WebRTC (ICE over UDP, signalled through a relay) to punch through NATs, DCUtR,
 * the bootstrap peers, and the node's seed as its libp2p key. Everything else (gossip, requests,
 * penalties, the upgrade of relayed connections) is the runtime-neutral core/net/libp2p-network.ts.
 */
import { bootstrap } from '@libp2p/bootstrap';
import { type CircuitRelayService, circuitRelayServer, circuitRelayTransport } from '@libp2p/circuit-relay-v2';
import { generateKeyPairFromSeed } from '@libp2p/crypto/keys';
import { dcutr } from '@libp2p/dcutr';
import type { PeerId } from '@libp2p/interface';
import { tcp } from '@libp2p/tcp';
import { webRTC } from '@libp2p/webrtc';
import { webSockets } from '@libp2p/websockets';
import type { Multiaddr } from '@multiformats/multiaddr';
import { Circuit, WebRTC } from '@multiformats/multiaddr-matcher';
import type { SigningKey } from '../core/crypto/ed25519.ts';
import { Libp2pNetwork, parseBootstrapAddress } from '../core/net/libp2p-network.ts';
import type { RpcLimits } from '../core/net/network.ts';
import { ipOf } from '../core/net/peer-limits.ts';
import { type ReachabilityService, reachability } from '../core/net/reachability.ts';
import { relayKeeper } from '../core/net/relay-keeper.ts';
import { RelayGuard, type RelayLimits } from '../core/net/relay-limits.ts';
import { systemClock } from '../core/time/clock.ts';

export { parseBootstrapAddress };

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
  /** Requests in flight per peer and protocol, and the serving side's deadlines. */
  readonly rpc?: Partial<RpcLimits>;
  /** PEM certificate and key: the WebSocket port then speaks TLS (`/tls/ws`), for pages served over HTTPS. */
  readonly wsTls?: { readonly cert: string; readonly key: string };
  /**
   * Addresses to announce instead of the listen addresses (`/dns4/node.example.org/tcp/443/tls/ws`):
   * what peers and `/wallet/config.json` hand out when the node sits behind a proxy or a DNS name.
   */
  readonly announce?: readonly string[];
  /** What this node's relay server gives and refuses (DEFAULT_RELAY_LIMITS). */
  readonly relay?: Partial<RelayLimits>;
  /** STUN servers (`stun:HOST:PORT`) ICE asks for this node's public mapping; none: host candidates only. */
  readonly stun?: readonly string[];
}

/** Starts the node's libp2p network on TCP and WebSockets. */
export async function startP2PNetwork(options: P2POptions): Promise<Libp2pNetwork> {
  const bootstrapAddrs = options.bootstrap.map(parseBootstrapAddress);
  const host = options.listenHost ?? '0.0.0.0';
  const wsPort = options.port === 0 ? 0 : options.port + 1;
  const guard = new RelayGuard(systemClock, options.relay);
  const { limits } = guard;
  // The gater runs inside libp2p, before the network exists: it is set once the network is.
  let network: Libp2pNetwork | undefined;
  const denyReservation = (peer: PeerId): boolean => {
    if (network === undefined) return true;
    const libp2p = network.libp2p as unknown as { services: { relay: CircuitRelayService } };
    const held = [...libp2p.services.relay.reservations.entries()].map(([holder, r]) => ({ peer: holder.toString(), ip: ipOf(r.addr) }));
    const from = network.libp2p.getConnections(peer)[0];
    const verdict = guard.judge(peer.toString(), from === undefined ? null : ipOf(from.remoteAddr), held);
    if (verdict.admit) return false;
    options.log?.(`p2p: refusing a relay reservation of ${peer.toString()} (${verdict.reason})`);
    if (verdict.penalise) network.penalise(peer.publicKey!.raw, verdict.reason, 'reservation-flood');
    return true;
  };
  // A private node's own addresses lead nowhere from outside its network, and a peer that tried
  // them would wait for each to time out: while it holds a reservation it announces only its
  // relay addresses (docs/network.md, "Through NATs").
  const relayOnlyWhilePrivate = (addresses: Multiaddr[]): Multiaddr[] => {
    const verdict = (network?.libp2p.services as { reachability?: ReachabilityService } | undefined)?.reachability?.verdict;
    // WebRTC through a relay (`…/p2p-circuit/webrtc`) is how peers punch a hole to it: it stays.
    const relayed = addresses.filter((a) => Circuit.matches(a) || WebRTC.matches(a));
    return verdict === 'private' && relayed.length > 0 ? relayed : addresses;
  };
  network = await Libp2pNetwork.start(
    {
      privateKey: await generateKeyPairFromSeed('Ed25519', options.key.exportSeed()),
      addresses: {
        listen: [
          `/ip4/${host}/tcp/${options.port}`,
          `/ip4/${host}/tcp/${wsPort}/${options.wsTls ? 'tls/ws' : 'ws'}`,
          // WebRTC listens through each relay reservation: its addresses are `…/p2p-circuit/webrtc`.
          '/webrtc',
        ],
        ...(options.announce !== undefined && options.announce.length > 0 ? { announce: [...options.announce] } : {}),
        announceFilter: relayOnlyWhilePrivate,
      },
      // The relay transport dials `/p2p-circuit` hints (directed placement through a relay) and
      // holds the reservations relayKeeper asks for.
      transports: [
        tcp(),
        webSockets(options.wsTls ? { https: { cert: options.wsTls.cert, key: options.wsTls.key } } : {}),
        circuitRelayTransport(),
        // Without servers ICE offers host candidates only; never libp2p's default public ones.
        webRTC({ rtcConfiguration: { iceServers: (options.stun ?? []).map((urls) => ({ urls })) } }),
      ],
      // Loopback and private addresses are how a devnet and a LAN mesh reach each other.
      connectionGater: { denyDialMultiaddr: () => false, denyInboundRelayReservation: denyReservation },
      peerDiscovery: bootstrapAddrs.length > 0 ? [bootstrap({ list: bootstrapAddrs.map(String), timeout: 100 })] : [],
      services: {
        relay: circuitRelayServer({
          reservations: {
            maxReservations: limits.maxReservations,
            reservationTtl: limits.reservationTtlMs,
            defaultDurationLimit: limits.relayedDurationMs,
            defaultDataLimit: BigInt(limits.relayedDataBytes),
          },
        }),
        reachability: reachability(options.log ? { log: options.log } : {}),
        relayKeeper: relayKeeper(options.log ? { log: options.log } : {}),
        // Over TCP it upgrades only when one side has a public address (Node cannot punch, docs/network.md).
        dcutr: dcutr(),
      },
    },
    {
      bootstrap: bootstrapAddrs,
      ...(options.log ? { log: options.log } : {}),
      ...(options.banThreshold === undefined ? {} : { banThreshold: options.banThreshold }),
      ...(options.banMs === undefined ? {} : { banMs: options.banMs }),
      ...(options.rpc === undefined ? {} : { rpc: options.rpc }),
    },
  );
  // A reservation is worth its slot only while its holder is connected: it goes with the connection.
  const relay = (network.libp2p as unknown as { services: { relay: CircuitRelayService } }).services.relay;
  network.libp2p.addEventListener('peer:disconnect', (event) => relay.reservations.delete(event.detail));
  return network;
}
