/**
 * Two repairs to WebRTC on Node, where @libp2p/webrtc runs on node-datachannel 0.33's polyfill.
 * Imported for its effect by the Node host's libp2p (p2p.ts), before any peer connection exists.
 *
 * - Closing a peer connection closes the data channels it created. The polyfill's close() does
 *   not: a channel that never opened keeps its native callbacks, and with them the event loop,
 *   alive for the life of the process. @libp2p/webrtc closes only the peer connection when an
 *   upgrade fails, so each failed hole punch leaked one channel, and a process that tried one
 *   never exited by itself.
 * - A peer connection that fails or closes before its channel opens fails that channel with an
 *   `error` event. @libp2p/webrtc's offerer swallows the failure while it reads candidates
 *   (readCandidatesUntilConnected) and then waits for the signalling channel to open, which it
 *   never does: a DTLS handshake that failed in 10 ms held the upgrade for its whole timeout.
 *   Seen on loopback under load: the answerer's DTLS hello reached the offerer before the answer
 *   did, and the offerer refused the certificate ("DTLS alert: unknown CA").
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
    this.addEventListener('connectionstatechange', () => {
      if (this.connectionState === 'failed' || this.connectionState === 'closed')
        failUnopened(this, `the WebRTC connection ${this.connectionState} before its channel opened`);
    });
  }
  const own = channels;
  own.add(channel);
  channel.addEventListener('close', () => own.delete(channel), { once: true });
  return channel;
};

RTCPeerConnection.prototype.close = function (this: RTCPeerConnection): void {
  close.call(this);
  failUnopened(this, 'the WebRTC connection closed before its channel opened');
  for (const channel of created.get(this) ?? []) {
    if (channel.readyState !== 'closed') channel.close();
  }
  created.delete(this);
};

function failUnopened(pc: RTCPeerConnection, reason: string): void {
  for (const channel of created.get(pc) ?? []) {
    if (channel.readyState !== 'connecting') continue;
    failed(channel, new Error(reason));
    channel.close();
    created.get(pc)?.delete(channel);
  }
}

/**
 * Fails `channel` with `error`, now and for every `error` listener added later: @libp2p/webrtc
 * starts to wait for the channel only once it has read the candidates, after the failure.
 */
function failed(channel: RTCDataChannel, error: Error): void {
  const event = (): Event => Object.assign(new Event('error'), { error });
  const add = channel.addEventListener.bind(channel);
  channel.addEventListener = (type: string, listener: EventListenerOrEventListenerObject | null, options?: AddEventListenerOptions | boolean): void => {
    add(type, listener, options);
    if (type === 'error' && listener !== null) queueMicrotask(() => (typeof listener === 'function' ? listener(event()) : listener.handleEvent(event())));
  };
  channel.dispatchEvent(event());
}
