/**
 * A WebRTC upgrade that never connects (no ICE path) leaves nothing behind once its peer
 * connection is closed: the data channel it created closes, and the process can exit.
 */
import { spawn } from 'node:child_process';
import { assert } from 'chai';
import { type RTCDataChannel, RTCPeerConnection } from 'node-datachannel/polyfill';
import { test } from '../test/harness.ts';
import './webrtc-close.ts';

/** A peer connection with a signalling channel and an offer that nobody answers: it never connects. */
async function unanswered(): Promise<{ pc: RTCPeerConnection; channel: RTCDataChannel }> {
  const pc = new RTCPeerConnection();
  const channel = pc.createDataChannel('init');
  await pc.setLocalDescription(await pc.createOffer());
  return { pc, channel };
}

test('closing a peer connection that never connected closes the data channel it created', async () => {
  const { pc, channel } = await unanswered();
  assert.equal(channel.readyState, 'connecting');
  const closed = new Promise<boolean>((resolve) => {
    const timer = setTimeout(() => resolve(false), 10_000);
    channel.addEventListener('close', () => resolve(clearTimeout(timer) === undefined), { once: true });
  });
  pc.close();
  assert.isTrue(await closed, 'the channel closed within 10 s');
  assert.equal(channel.readyState, 'closed');
});

test('a handshake that fails before the channel opens fails the channel with an error event, at once and for later listeners', async () => {
  const offerer = new RTCPeerConnection({ bindAddress: '127.0.0.1', iceServers: [] } as RTCConfiguration);
  const answerer = new RTCPeerConnection({ bindAddress: '127.0.0.1', iceServers: [] } as RTCConfiguration);
  try {
    offerer.onicecandidate = ({ candidate }) => void (candidate && answerer.addIceCandidate(candidate).catch(() => {}));
    answerer.onicecandidate = ({ candidate }) => void (candidate && offerer.addIceCandidate(candidate).catch(() => {}));
    const channel = offerer.createDataChannel('init');
    const heard = (): Promise<string> =>
      new Promise<string>((resolve) => {
        const timer = setTimeout(() => resolve('no error event within 10 s'), 10_000);
        channel.addEventListener('error', (event) => resolve(clearTimeout(timer) ?? String((event as Event & { error?: Error }).error?.message)), {
          once: true,
        });
      });
    const failed = heard();
    await offerer.setLocalDescription(await offerer.createOffer());
    await answerer.setRemoteDescription(offerer.localDescription!);
    await answerer.setLocalDescription(await answerer.createAnswer());
    // The answer's certificate fingerprint, altered: the offerer refuses the DTLS handshake.
    const answer = answerer.localDescription!;
    const forged = answer.sdp.replace(/a=fingerprint:sha-256 ([0-9A-F]{2})/, (_, byte: string) => `a=fingerprint:sha-256 ${byte === '00' ? '01' : '00'}`);
    await offerer.setRemoteDescription({ type: answer.type, sdp: forged });
    assert.match(await failed, /^the WebRTC connection (failed|closed) before its channel opened$/);
    // A listener added after the failure hears it too: @libp2p/webrtc's offerer waits for the
    // channel only once it has read the candidates.
    assert.match(await heard(), /^the WebRTC connection (failed|closed) before its channel opened$/);
  } finally {
    offerer.close();
    answerer.close();
  }
});

test('a process whose WebRTC attempt never connected exits by itself once the peer connection is closed', async () => {
  const script = `
    import { RTCPeerConnection } from 'node-datachannel/polyfill';
    await import(${JSON.stringify(new URL('./webrtc-close.ts', import.meta.url).href)});
    const pc = new RTCPeerConnection();
    pc.createDataChannel('init');
    await pc.setLocalDescription(await pc.createOffer());
    pc.close();
  `;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], { cwd: new URL('..', import.meta.url), stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exited = await new Promise<number | null | 'still running'>((resolve) => {
    // Without the close of its channel the process would hold its event loop for good.
    const timer = setTimeout(() => resolve('still running'), 20_000);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve(code);
    });
  });
  if (exited === 'still running') child.kill('SIGKILL');
  assert.strictEqual(exited, 0, stderr);
});
