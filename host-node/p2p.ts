/**
 * The Node host's libp2p: TCP and WebSockets listeners on IPv4 and IPv6, a circuit-relay v2 server so
 * browsers and nodes behind NATs can be reached through this host (within RelayLimits), the
 * dial-back check of its own reachability and, while it is not reachable, reservations on relays
 * (docs/network.md, "Through NATs"), WebRTC (ICE over UDP, signalled through a relay) to punch
 * through NATs, DCUtR, the bootstrap peers, mDNS and UPnP port mapping where asked, and the node's
 * seed as its libp2p key. Everything else (gossip, requests, penalties, the upgrade of relayed
 * connections) is the runtime-neutral core/net/libp2p-network.ts.
 */
import { isIPv6 } from 'node:net';
import './webrtc-close.ts';
import { bootstrap } from '@libp2p/bootstrap';
import { type CircuitRelayService, circuitRelayServer, circuitRelayTransport } from '@libp2p/circuit-relay-v2';
import { generateKeyPairFromSeed } from '@libp2p/crypto/keys';
import { dcutr } from '@libp2p/dcutr';
import type { PeerDiscovery, PeerId, PeerInfo } from '@libp2p/interface';
import { type MulticastDNSComponents, mdns } from '@libp2p/mdns';
import { tcp } from '@libp2p/tcp';
import { uPnPNAT } from '@libp2p/upnp-nat';
import { webRTC } from '@libp2p/webrtc';
import { webSockets } from '@libp2p/websockets';
import type { Multiaddr } from '@multiformats/multiaddr';
import { Circuit, WebRTC } from '@multiformats/multiaddr-matcher';
import type { SigningKey } from '../core/crypto/ed25519.ts';
import type { PeerRank } from '../core/net/connection-pruning.ts';
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
  /** Address to listen on (default all interfaces, IPv4 and IPv6). */
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
  /** mDNS on the local network under this service name (`_mesh-devnet-1000ms._udp.local`); none: no mDNS. */
  readonly mdnsService?: string;
  /** Ask the gateway (UPnP IGD) to forward the listening ports, and announce the mapped address. */
  readonly upnp?: boolean;
  /** Connections held at once, and from one IP address (core/net/connection-pruning.ts). */
  readonly maxConnections?: number;
  readonly connectionsPerIp?: number;
  /** What the node knows a peer to be (a producer, one with jobs in flight) for the pruning order. */
  readonly rankPeer?: (node: Uint8Array) => PeerRank | null;
  /** 'server' (the default) answers peer-routing lookups; 'client' only makes them. */
  readonly routing?: 'server' | 'client';
  /** What this node's relay server gives and refuses (DEFAULT_RELAY_LIMITS). */
  readonly relay?: Partial<RelayLimits>;
  /** STUN servers (`stun:HOST:PORT`) ICE asks for this node's public mapping; none: host candidates only. */
  readonly stun?: readonly string[];
}

/**
 * The multiaddrs to listen on: TCP on `port` and WebSockets on `wsPort`, on `host` alone when given,
 * else on every IPv4 and every IPv6 interface. Where the machine has no IPv6, libp2p starts on IPv4
 * alone (its transport manager accepts IPv6 failing everywhere when IPv4 listens).
 */
export function listenAddresses(host: string | undefined, port: number, wsPort: number, ws: 'ws' | 'tls/ws'): string[] {
  const hosts = host === undefined ? ['/ip4/0.0.0.0', '/ip6/::'] : [`/${isIPv6(host) ? 'ip6' : 'ip4'}/${host}`];
  return hosts.flatMap((h) => [`${h}/tcp/${port}`, `${h}/tcp/${wsPort}/${ws}`]);
}

type DialingComponents = MulticastDNSComponents & {
  readonly connectionManager: { openConnection(to: PeerInfo['multiaddrs']): Promise<unknown>; getConnections(peer: PeerInfo['id']): unknown[] };
};

/**
 * mDNS discovery that dials what it finds: libp2p 3 dials no discovered peer by itself (the
 * bootstrap module dials its own list), and mDNS only tells.
 */
function dialingMdns(serviceTag: string): (components: DialingComponents) => PeerDiscovery {
  const discovery = mdns({ serviceTag });
  return (components) => {
    const found = discovery(components);
    found.addEventListener('peer', (event) => {
      const { id, multiaddrs } = event.detail;
      if (multiaddrs.length === 0 || components.connectionManager.getConnections(id).length > 0) return;
      components.connectionManager.openConnection(multiaddrs).catch(() => {
        // Unreachable from here (another interface's address); asked again at the next answer.
      });
    });
    return found;
  };
}

/** Starts the node's libp2p network on TCP and WebSockets. */
export async function startP2PNetwork(options: P2POptions): Promise<Libp2pNetwork> {
  const bootstrapAddrs = options.bootstrap.map(parseBootstrapAddress);
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
          ...listenAddresses(options.listenHost, options.port, wsPort, options.wsTls ? 'tls/ws' : 'ws'),
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
        webRTC({ rtcConfiguration: iceConfiguration(options) }),
      ],
      // Loopback and private addresses are how a devnet and a LAN mesh reach each other.
      connectionGater: { denyDialMultiaddr: () => false, denyInboundRelayReservation: denyReservation },
      peerDiscovery: [
        ...(bootstrapAddrs.length > 0 ? [bootstrap({ list: bootstrapAddrs.map(String), timeout: 100 })] : []),
        ...(options.mdnsService === undefined ? [] : [dialingMdns(options.mdnsService)]),
      ],
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
        // The gateway's answer is the confirmation: the mapped address is announced at once.
        ...(options.upnp === true ? { upnp: uPnPNAT({ autoConfirmAddress: true }) } : {}),
      },
    },
    {
      bootstrap: bootstrapAddrs,
      // A host answers peer-routing lookups: other nodes can dial it.
      routing: options.routing ?? 'server',
      ...(options.log ? { log: options.log } : {}),
      ...(options.banThreshold === undefined ? {} : { banThreshold: options.banThreshold }),
      ...(options.banMs === undefined ? {} : { banMs: options.banMs }),
      ...(options.rpc === undefined ? {} : { rpc: options.rpc }),
      ...(options.maxConnections === undefined ? {} : { maxConnections: options.maxConnections }),
      ...(options.connectionsPerIp === undefined ? {} : { connectionsPerIp: options.connectionsPerIp }),
      ...(options.rankPeer === undefined ? {} : { rankPeer: options.rankPeer }),
    },
  );
  // A reservation is worth its slot only while its holder is connected: it goes with the connection.
  const relay = (network.libp2p as unknown as { services: { relay: CircuitRelayService } }).services.relay;
  network.libp2p.addEventListener('peer:disconnect', (event) => relay.reservations.delete(event.detail));
  return network;
}

/**
 * ICE's servers, and the one address it binds to when the node listens on one (`--listen-host`):
 * ICE leaves loopback out of the addresses it gathers from the interfaces, so a node on
 * 127.0.0.1 punches on loopback only when its sockets are bound there (node-datachannel's
 * `bindAddress`, passed through to libdatachannel).
 */
function iceConfiguration(options: P2POptions): RTCConfiguration & { bindAddress?: string } {
  const iceServers = (options.stun ?? []).map((urls) => ({ urls }));
  const host = options.listenHost;
  const specific = host !== undefined && host !== '0.0.0.0' && host !== '::';
  return { iceServers, ...(specific ? { bindAddress: host } : {}) };
}
