/**
 * The page's libp2p: WebSockets to hosts, WebRTC to other pages (signalled through a host's
 * circuit relay), and the relay transport that reserves a slot on each host so other pages can
 * reach this one. Gossip, requests and penalties are the runtime-neutral core/net/libp2p-network.ts.
 *
 * A relayed circuit is small and short-lived (libp2p's defaults: 2 minutes, 128 KiB) and libp2p runs
 * no gossip over it, so the page never syncs through one: it syncs from the hosts it reaches over
 * WebSockets, and from pages only once WebRTC has given a direct connection.
 */
import { bootstrap as bootstrapDiscovery } from '@libp2p/bootstrap';
import { circuitRelayTransport } from '@libp2p/circuit-relay-v2';
import { generateKeyPairFromSeed } from '@libp2p/crypto/keys';
import { webRTC } from '@libp2p/webrtc';
import { webSockets } from '@libp2p/websockets';
import type { SigningKey } from '../core/crypto/ed25519.ts';
import { Libp2pNetwork, parseBootstrapAddress } from '../core/net/libp2p-network.ts';

export interface BrowserNetworkOptions {
  readonly key: SigningKey;
  /** Hosts' WebSocket multiaddrs with /p2p/<peer id> (`/ip4/…/tcp/…/ws/p2p/…`); kept connected. */
  readonly hosts: readonly string[];
  /**
   * Allow dialling loopback and private addresses. The browser's default gater refuses them; a
   * devnet or a wallet served by a host on this machine or LAN needs them.
   */
  readonly allowPrivateAddresses?: boolean;
  readonly log?: (line: string) => void;
}

/** Starts the page's libp2p network and keeps it joined to `hosts`. */
export async function startBrowserNetwork(options: BrowserNetworkOptions): Promise<Libp2pNetwork> {
  const hosts = options.hosts.map(parseBootstrapAddress);
  return Libp2pNetwork.start(
    {
      privateKey: await generateKeyPairFromSeed('Ed25519', options.key.exportSeed()),
      // `/p2p-circuit` makes a reservation on the relays of connected hosts; `/webrtc` accepts
      // WebRTC connections signalled through them.
      addresses: { listen: ['/p2p-circuit', '/webrtc'] },
      transports: [webSockets(), webRTC(), circuitRelayTransport()],
      ...(options.allowPrivateAddresses ? { connectionGater: { denyDialMultiaddr: () => false } } : {}),
      peerDiscovery: hosts.length > 0 ? [bootstrapDiscovery({ list: hosts.map(String), timeout: 100 })] : [],
    },
    { bootstrap: hosts, ...(options.log ? { log: options.log } : {}) },
  );
}
