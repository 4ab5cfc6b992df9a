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
import { isPrivate } from '@libp2p/utils';
import { webRTC } from '@libp2p/webrtc';
import { webSockets } from '@libp2p/websockets';
import type { Multiaddr } from '@multiformats/multiaddr';
import { WebSockets } from '@multiformats/multiaddr-matcher';
import type { SigningKey } from '../core/crypto/ed25519.ts';
import { Libp2pNetwork, parseBootstrapAddress } from '../core/net/libp2p-network.ts';

export interface BrowserNetworkOptions {
  readonly key: SigningKey;
  /** Hosts' WebSocket multiaddrs with /p2p/<peer id> (`/ip4/…/tcp/…/ws/p2p/…`); kept connected. */
  readonly hosts: readonly string[];
  /**
   * Allow dialling any loopback or private address, not only the hosts'. Only for tests of pages
   * that reach each other through several devnet hosts' relays; the wallet never sets it.
   */
  readonly allowPrivateAddresses?: boolean;
  readonly log?: (line: string) => void;
}

/**
 * The browser's default rule (no plain ws:, no loopback or private address) except for the
 * configured hosts' own addresses (and circuits through them): a host on this machine or LAN is
 * dialled, but an address some peer gossiped cannot point the page at the user's LAN.
 */
function hostsOnlyGater(hosts: readonly string[]): (address: Multiaddr) => boolean {
  const transportOf = (address: string): string => address.split('/p2p/')[0]!;
  const allowed = new Set(hosts.map(transportOf));
  return (address) => !allowed.has(transportOf(address.toString())) && (WebSockets.matches(address) || isPrivate(address));
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
      connectionGater: { denyDialMultiaddr: options.allowPrivateAddresses ? () => false : hostsOnlyGater(options.hosts) },
      peerDiscovery: hosts.length > 0 ? [bootstrapDiscovery({ list: hosts.map(String), timeout: 100 })] : [],
    },
    { bootstrap: hosts, ...(options.log ? { log: options.log } : {}) },
  );
}
