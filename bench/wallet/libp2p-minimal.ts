// The size baseline: libp2p's own minimal browser node (its browser example's transports,
// encrypter, muxer and identify), bundled exactly as the wallet is.
import { noise } from '@chainsafe/libp2p-noise';
import { yamux } from '@chainsafe/libp2p-yamux';
import { circuitRelayTransport } from '@libp2p/circuit-relay-v2';
import { identify } from '@libp2p/identify';
import { webRTC } from '@libp2p/webrtc';
import { webSockets } from '@libp2p/websockets';
import { createLibp2p } from 'libp2p';

const node = await createLibp2p({
  addresses: { listen: ['/p2p-circuit', '/webrtc'] },
  transports: [webSockets(), webRTC(), circuitRelayTransport()],
  connectionEncrypters: [noise()],
  streamMuxers: [yamux()],
  services: { identify: identify() },
});
(globalThis as { node?: unknown }).node = node;
