/**
 * A message lane spoken by hand, for tests that play a peer outside the protocol's rules: it opens
 * a lane to `peer`, writes `messages` (encoded AppMessages, or any bytes) as frames, and reads as
 * many acknowledgements.
 */
import { decode } from '../encoding/codec.ts';
import { FrameReader, framesOf } from '../net/frames.ts';
import type { Network } from '../net/network.ts';
import { MESSAGE_STREAM } from './lanes.ts';
import { type AppAck, appAckCodec, MAX_FRAME_BYTES } from './wire.ts';

export async function laneExchange(network: Network, peer: Uint8Array, messages: readonly Uint8Array[]): Promise<AppAck[]> {
  const stream = await network.openStream(peer, MESSAGE_STREAM);
  await stream.write(framesOf(messages));
  const frames = new FrameReader(MAX_FRAME_BYTES);
  const acks: AppAck[] = [];
  for await (const chunk of stream) {
    for (const frame of frames.push(chunk)) acks.push(decode(appAckCodec, frame));
    if (acks.length >= messages.length) break;
  }
  await stream.closeWrite().catch(() => {});
  return acks;
}
