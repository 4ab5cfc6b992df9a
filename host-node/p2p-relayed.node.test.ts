/**
 * Relayed connections on loopback: a node that holds a reservation on a relay is reached through
 * it, the connection is marked relayed, small protocols run on it, and bulk ones wait for the
 * WebRTC upgrade or fail with RelayedOnlyError saying why (docs/network.md, "Relayed connections").
 */

import { after } from 'node:test';
import { noise } from '@chainsafe/libp2p-noise';
import { yamux } from '@chainsafe/libp2p-yamux';
import { circuitRelayServer, circuitRelayTransport } from '@libp2p/circuit-relay-v2';
import { generateKeyPairFromSeed } from '@libp2p/crypto/keys';
import { identify } from '@libp2p/identify';
import { tcp } from '@libp2p/tcp';
import { webRTC } from '@libp2p/webrtc';
import { assert } from 'chai';
import { createLibp2p } from 'libp2p';
import { cleanup } from 'node-datachannel';
import { SigningKey } from '../core/crypto/ed25519.ts';
import { toHex } from '../core/encoding/hex.ts';
import { RelayedOnlyError } from '../core/net/errors.ts';
import { Libp2pNetwork } from '../core/net/libp2p-network.ts';
import { streamProtocolId } from '../core/net/network.ts';
import { PEER_LIMITS } from '../core/net/peer-limits.ts';
import { test } from '../test/harness.ts';
import { waitFor } from '../test/mesh-process.ts';
import { startP2PNetwork } from './p2p.ts';

// Once, in a loaded full run, the file's process outlived its tests by a native handle alone (node-datachannel's
// threads); `mesh node` exits explicitly once it has closed everything (node-command.ts), and so does this file.
after(() => cleanup());

const echo = async ({ data }: { data: Uint8Array }): Promise<Uint8Array> => data;
const circuitTo = (relay: Libp2pNetwork, node: Libp2pNetwork): string => `${relay.addresses()[0]!}/p2p-circuit/p2p/${node.libp2p.peerId.toString()}`;
const peerOf = (from: Libp2pNetwork, to: Libp2pNetwork) => from.peers().find((p) => toHex(p.node) === toHex(to.self));

/**
 * A host reached only through `relay` (a reservation there, and no listen address of its own),
 * with WebRTC or without: on loopback the node's own host would find itself public and reserve nothing.
 */
async function behindRelay(relay: Libp2pNetwork, withWebRtc: boolean): Promise<Libp2pNetwork> {
  return Libp2pNetwork.start({
    privateKey: await generateKeyPairFromSeed('Ed25519', SigningKey.generate().exportSeed()),
    addresses: { listen: [`${relay.addresses()[0]!}/p2p-circuit`, ...(withWebRtc ? ['/webrtc'] : [])] },
    // Bound to loopback like the other two (listenHost), or ICE would gather no candidate there.
    transports: [
      tcp(),
      circuitRelayTransport(),
      ...(withWebRtc ? [webRTC({ rtcConfiguration: { bindAddress: '127.0.0.1', iceServers: [] } as RTCConfiguration })] : []),
    ],
    connectionGater: { denyDialMultiaddr: () => false },
  });
}

async function reserved(node: Libp2pNetwork): Promise<void> {
  await waitFor('a relay reservation', async () => node.addresses().some((a) => a.includes('/p2p-circuit')), 10_000, 20);
}

test('Libp2pNetwork: a relayed connection runs only relayed protocols, then is upgraded to WebRTC and runs the rest', async () => {
  const relay = await startP2PNetwork({ key: SigningKey.generate(), port: 0, listenHost: '127.0.0.1', bootstrap: [] });
  const b = await behindRelay(relay, true);
  const a = await startP2PNetwork({ key: SigningKey.generate(), port: 0, listenHost: '127.0.0.1', bootstrap: [] });
  try {
    await reserved(b);
    assert.isTrue(
      b.addresses().some((addr) => addr.endsWith(`/p2p-circuit/webrtc/p2p/${b.libp2p.peerId.toString()}`)),
      'B listens on WebRTC through its relay',
    );
    b.serve('small', echo, { relayed: true });
    b.serve('bulk', echo);
    await a.dial(b.self, circuitTo(relay, b));
    assert.equal(toHex(await a.request(b.self, 'small', Uint8Array.of(1), { relayed: true })), '01');
    // The bulk request waits for the upgrade, which A starts as the one that dialled the relay.
    assert.equal(toHex(await a.request(b.self, 'bulk', Uint8Array.of(2))), '02');
    const peer = await waitFor('the relayed connection closed', async () => {
      const p = peerOf(a, b);
      return p !== undefined && a.libp2p.getConnections(b.libp2p.peerId).length === 1 ? p : undefined;
    });
    assert.isFalse(peer.relayed);
    // libp2p names a WebRTC connection by the relay address it was signalled through.
    assert.match(peer.remoteAddr, /\/p2p-circuit\/webrtc\/p2p\//);
  } finally {
    await Promise.all([a.stop(), b.stop(), relay.stop()]);
  }
});

test('Libp2pNetwork: to a peer without WebRTC, bulk protocols fail with RelayedOnlyError and small ones run on the relay', async () => {
  const relay = await startP2PNetwork({ key: SigningKey.generate(), port: 0, listenHost: '127.0.0.1', bootstrap: [] });
  const b = await behindRelay(relay, false);
  const a = await startP2PNetwork({ key: SigningKey.generate(), port: 0, listenHost: '127.0.0.1', bootstrap: [] });
  try {
    await reserved(b);
    b.serve('small', echo, { relayed: true });
    b.serve('bulk', echo);
    const tunnel = streamProtocolId('tunnel', 'bulk');
    b.serveStream(tunnel, (stream) => stream.reset());
    await a.dial(b.self, circuitTo(relay, b));
    assert.isTrue(peerOf(a, b)?.relayed, 'the connection is marked relayed');
    assert.equal(toHex(await a.request(b.self, 'small', Uint8Array.of(1), { relayed: true })), '01');
    for (const bulk of [() => a.request(b.self, 'bulk', Uint8Array.of(2)), () => a.openStream(b.self, tunnel)]) {
      const error = await bulk().then(
        () => null,
        (e: unknown) => e,
      );
      assert.instanceOf(error, RelayedOnlyError);
      assert.equal((error as RelayedOnlyError).code, 'relayed-only');
      assert.match((error as Error).message, /reached only through a relay, and \/mesh\/.* runs on direct connections only: it announces no WebRTC address/);
    }
    // A requester that asks a bulk protocol to run on the relay is refused by the server all the same.
    const refused = await a.request(b.self, 'bulk', Uint8Array.of(3), { relayed: true }).then(
      () => null,
      (e: unknown) => e,
    );
    assert.isNotNull(refused);
    assert.isTrue(peerOf(a, b)?.relayed, 'still relayed, and still connected');
  } finally {
    await Promise.all([a.stop(), b.stop(), relay.stop()]);
  }
});

test('Libp2pNetwork: peers behind one relay are not one address: more than connections-per-ip of them reach a node through it', async () => {
  // A bare libp2p relay: a mesh node's own would refuse this many connections from one address.
  const relay = await createLibp2p({
    addresses: { listen: ['/ip4/127.0.0.1/tcp/0'] },
    transports: [tcp()],
    connectionEncrypters: [noise()],
    streamMuxers: [yamux()],
    connectionManager: { inboundConnectionThreshold: 100 },
    connectionGater: { denyDialMultiaddr: () => false },
    services: { identify: identify(), relay: circuitRelayServer() },
  });
  const relayAddress = relay.getMultiaddrs()[0]!.toString();
  const b = await Libp2pNetwork.start({
    privateKey: await generateKeyPairFromSeed('Ed25519', SigningKey.generate().exportSeed()),
    addresses: { listen: [`${relayAddress}/p2p-circuit`] },
    transports: [tcp(), circuitRelayTransport()],
    connectionGater: { denyDialMultiaddr: () => false },
  });
  const dialers: Libp2pNetwork[] = [];
  try {
    await reserved(b);
    b.serve('small', echo, { relayed: true });
    for (let i = 0; i <= PEER_LIMITS.connectionsPerIp; i++) {
      const dialer = await Libp2pNetwork.start({
        privateKey: await generateKeyPairFromSeed('Ed25519', SigningKey.generate().exportSeed()),
        transports: [tcp(), circuitRelayTransport()],
        connectionGater: { denyDialMultiaddr: () => false },
      });
      dialers.push(dialer);
      // Paced under libp2p's own rate of new connections from one address (B sees the relay's).
      await new Promise((resolve) => setTimeout(resolve, 1000 / (PEER_LIMITS.connectionsPerIpPerSecond - 1)));
      await dialer.dial(b.self, `${relayAddress}/p2p-circuit/p2p/${b.libp2p.peerId.toString()}`);
      assert.equal(toHex(await dialer.request(b.self, 'small', Uint8Array.of(i), { relayed: true })), toHex(Uint8Array.of(i)));
    }
    assert.isAbove(b.peers().filter((p) => p.relayed).length, PEER_LIMITS.connectionsPerIp);
  } finally {
    await Promise.all([b.stop(), relay.stop(), ...dialers.map((d) => d.stop())]);
  }
});
