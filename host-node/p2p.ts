/**
 * The Node host's libp2p: TCP and WebSockets listeners, a circuit-relay v2 server so browsers and
 * nodes behind NATs can reach the mesh through this host, reservations on the relays it is given,
 * WebRTC (ICE over UDP, signalled through a relay) to punch through NATs, DCUtR, the bootstrap
 * peers, and the node's seed as its libp2p key. Everything else (gossip, requests, penalties, the
 * upgrade of relayed connections) is the runtime-neutral core/net/libp2p-network.ts.
 */
import { bootstrap } from '@libp2p/bootstrap';
import { circuitRelayServer, circuitRelayTransport } from '@libp2p/circuit-relay-v2';
import { generateKeyPairFromSeed } from '@libp2p/crypto/keys';
import { dcutr } from '@libp2p/dcutr';
import { tcp } from '@libp2p/tcp';
import { webRTC } from '@libp2p/webrtc';
import { webSockets } from '@libp2p/websockets';
import type { SigningKey } from '../core/crypto/ed25519.ts';
import { Libp2pNetwork, parseBootstrapAddress } from '../core/net/libp2p-network.ts';
import type { RpcLimits } from '../core/net/network.ts';
import { keepReservations } from './relay-reservations.ts';

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
  /**
   * Relays (`/…/p2p/<relay id>`) to keep a circuit-relay v2 reservation on, whenever connected to
   * them (relay-reservations.ts): the node then listens at `<relay>/p2p-circuit` and
   * `<relay>/p2p-circuit/webrtc`, where peers reach it behind a NAT.
   */
  readonly relays?: readonly string[];
  /** STUN servers (`stun:HOST:PORT`) ICE asks for this node's public mapping; none: host candidates only. */
  readonly stun?: readonly string[];
}

/** Starts the node's libp2p network on TCP and WebSockets. */
export async function startP2PNetwork(options: P2POptions): Promise<Libp2pNetwork> {
  const bootstrapAddrs = options.bootstrap.map(parseBootstrapAddress);
  const relayAddrs = (options.relays ?? []).map(parseBootstrapAddress);
  const joinAddrs = [...bootstrapAddrs, ...relayAddrs];
  const host = options.listenHost ?? '0.0.0.0';
  const wsPort = options.port === 0 ? 0 : options.port + 1;
  const network = await Libp2pNetwork.start(
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
      },
      // The relay transport dials `/p2p-circuit` hints (directed placement through a relay).
      transports: [
        tcp(),
        webSockets(options.wsTls ? { https: { cert: options.wsTls.cert, key: options.wsTls.key } } : {}),
        circuitRelayTransport(),
        // Without servers ICE offers host candidates only; never libp2p's default public ones.
        webRTC({ rtcConfiguration: { iceServers: (options.stun ?? []).map((urls) => ({ urls })) } }),
      ],
      // Loopback and private addresses are how a devnet and a LAN mesh reach each other.
      connectionGater: { denyDialMultiaddr: () => false },
      peerDiscovery: joinAddrs.length > 0 ? [bootstrap({ list: joinAddrs.map(String), timeout: 100 })] : [],
      // DCUtR: over TCP it upgrades only when one side has a public address (Node cannot punch, docs/network.md).
      services: { relay: circuitRelayServer(), dcutr: dcutr() },
    },
    {
      // A relay is kept connected as a bootstrap peer is: its reservation lives on that connection.
      bootstrap: joinAddrs,
      ...(options.log ? { log: options.log } : {}),
      ...(options.banThreshold === undefined ? {} : { banThreshold: options.banThreshold }),
      ...(options.banMs === undefined ? {} : { banMs: options.banMs }),
      ...(options.rpc === undefined ? {} : { rpc: options.rpc }),
    },
  );
  keepReservations(network.libp2p, relayAddrs, options.log ?? (() => {}));
  return network;
}
