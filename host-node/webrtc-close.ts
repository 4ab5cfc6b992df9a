/**
 * Closing a WebRTC peer connection closes the data channels it created. node-datachannel 0.33's
 * RTCPeerConnection.close() does not: a channel that never opened (the signalling channel of an
 * upgrade whose ICE found no path) keeps its native callbacks, and with them the event loop, alive
 * for the life of the process. @libp2p/webrtc closes only the peer connection when an upgrade
 * fails, so each failed hole punch would leak one channel, and a process that tried one would
 * never exit by itself. Imported for its effect by the Node host's libp2p (p2p.ts), before any
 * peer connection exists.
 */
import { type RTCDataChannel, RTCPeerConnection } from 'node-datachannel/polyfill';

const created = new WeakMap<RTCPeerConnection, Set<RTCDataChannel>>();
const { createDataChannel, close } = RTCPeerConnection.prototype;

RTCPeerConnection.prototype.createDataChannel = function (this: RTCPeerConnection, label: string, init?: RTCDataChannelInit): RTCDataChannel {
  const channel = createDataChannel.call(this, label, init);
  let channels = created.get(this);
  if (channels === undefined) {
    channels = new Set();
    created.set(this, channels);
  }
  const own = channels;
  own.add(channel);
  channel.addEventListener('close', () => own.delete(channel), { once: true });
  return channel;
};

RTCPeerConnection.prototype.close = function (this: RTCPeerConnection): void {
  close.call(this);
  for (const channel of created.get(this) ?? []) {
    if (channel.readyState !== 'closed') channel.close();
  }
  created.delete(this);
};
