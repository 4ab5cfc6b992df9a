/**
 * App messaging's wire forms (node-messaging.md §2 "Internal wire forms"; docs/messaging.md
 * "Protocol"), canonical binary (core/encoding/codec.ts):
 *
 * - AppMessage `{from_node, topic, payload}`, answered by AppAck: queued (with the receiver's inbox
 *   position) or refused (a reason code and a detail). As the RPC `app.message` on the mesh RPC
 *   protocol 1, or pipelined on a lane, one stream per pair of nodes and direction (lanes.ts),
 *   as frames of the same request and answer.
 * - `app.request` on the mesh RPC protocol 1: AppRequest `{from_node, topic, payload, timeout_ms}`, answered by AppReply: the
 *   app's reply, or refused. The connection authenticates the requester on both; `from_node` must
 *   name it.
 * - pub/sub on `mesh-app/<topic>`: AppPubSubMsg, signed by its author (so any relay may carry it),
 *   with a random nonce (identical publishes stay distinct) and the author's time (a copy replayed
 *   long after is refused even once its id is forgotten).
 */

import { SIGNATURE_LENGTH, type SigningKey, verify } from '../crypto/ed25519.ts';
import { sha256 } from '../crypto/sha256.ts';
import { concatBytes } from '../encoding/bytes.ts';
import { bytes32, type Codec, decode, encode, fixedBytes, type Infer, struct, u32, uint53, utf8, varBytes, variant } from '../encoding/codec.ts';
import { toHex } from '../encoding/hex.ts';
import { DecodeError, InvalidEncodingError } from '../errors.ts';
import { domainBytes } from '../ledger/domain.ts';
import { RemoteError } from '../net/errors.ts';

export const MESSAGING_RPC = {
  /** The spec's wire form of a directed message; lanes (lanes.ts) carry the same request and answer pipelined. */
  message: 'app.message',
  request: 'app.request',
} as const;

/** The largest payload of a message, a request, a reply or a publish: 64 KiB. */
export const MAX_PAYLOAD_BYTES = 64 * 1024;
/** An app topic's longest form (network.ts `appTopic`: 1 to 128 visible ASCII characters). */
export const MAX_TOPIC_BYTES = 128;
const MAX_REASON_CODE_BYTES = 32;
export const MAX_DETAIL_BYTES = 512;
/** A nonce's bytes: random, so two publishes of the same payload are two messages. */
export const NONCE_BYTES = 16;
/** What an RPC carrying a payload may take, each way: the payload and its fields. */
export const MAX_FRAME_BYTES = MAX_PAYLOAD_BYTES + 1024;

const refused = struct({ reason: utf8(MAX_REASON_CODE_BYTES), detail: utf8(MAX_DETAIL_BYTES) }, 'refused');

export const appMessageCodec = struct({ from_node: bytes32, topic: utf8(MAX_TOPIC_BYTES), payload: varBytes(MAX_PAYLOAD_BYTES) }, 'AppMessage');

export const appAckCodec = variant(
  'answer',
  {
    Queued: [0, struct({ seq: uint53 }, 'queued')],
    Refused: [1, refused],
  },
  'AppAck',
);

export const appRequestCodec = struct(
  { from_node: bytes32, topic: utf8(MAX_TOPIC_BYTES), payload: varBytes(MAX_PAYLOAD_BYTES), timeout_ms: u32 },
  'AppRequest',
);

export const appReplyCodec = variant(
  'answer',
  {
    Reply: [0, struct({ payload: varBytes(MAX_PAYLOAD_BYTES) }, 'reply')],
    Refused: [1, refused],
  },
  'AppReply',
);

/** What the author of a publish signs. */
export const pubSubBodyCodec = struct(
  { from: bytes32, topic: utf8(MAX_TOPIC_BYTES), payload: varBytes(MAX_PAYLOAD_BYTES), nonce: fixedBytes(NONCE_BYTES), at_ms: uint53 },
  'AppPubSubMsg',
);

export type AppMessage = Infer<typeof appMessageCodec>;
export type AppAck = Infer<typeof appAckCodec>;
export type AppRequest = Infer<typeof appRequestCodec>;
export type AppReply = Infer<typeof appReplyCodec>;
export type PubSubBody = Infer<typeof pubSubBodyCodec>;

/** A refusal of either answer, cut to its bounds. */
export interface Refusal {
  readonly reason: string;
  readonly detail: string;
}

/** A signed publish as it travels: body ‖ signature; `id` names it for duplicate suppression. */
export interface SignedPubSub {
  readonly body: PubSubBody;
  readonly bytes: Uint8Array;
  /** SHA-256 of the author and the nonce: one id per publish, however often it is relayed. */
  readonly id: string;
}

function signingBytes(network: string, bodyBytes: Uint8Array): Uint8Array {
  return domainBytes('mesh/app-pubsub/1', network, bodyBytes);
}

function idOf(body: PubSubBody): string {
  return toHex(sha256(concatBytes(body.from, body.nonce)));
}

/** A peer's answer, decoded, or RemoteError 'bad-response' (502) when it is not one of the protocol. */
export function answerOf<T>(codec: Codec<T>, peer: Uint8Array, bytes: Uint8Array): T {
  try {
    return decode(codec, bytes);
  } catch (error) {
    if (error instanceof DecodeError)
      throw new RemoteError('bad-response', `${toHex(peer).slice(0, 16)}… answered something that is not a messaging answer: ${error.message}`);
    throw error;
  }
}

/** Signs a publish with `key` (whose public key must be `body.from`) for `network`. */
export async function signPubSub(body: PubSubBody, key: SigningKey, network: string): Promise<SignedPubSub> {
  const bodyBytes = encode(pubSubBodyCodec, body);
  const signature = await key.sign(signingBytes(network, bodyBytes));
  return { body, bytes: concatBytes(bodyBytes, signature), id: idOf(body) };
}

/**
 * Decodes a publish and checks its author's signature; throws InvalidEncodingError for bytes that
 * do not decode, and resolves to null for a signature that does not verify.
 */
export async function openPubSub(bytes: Uint8Array, network: string): Promise<SignedPubSub | null> {
  if (bytes.length <= SIGNATURE_LENGTH) throw new InvalidEncodingError('truncated', `a publish of ${bytes.length} bytes is too short to hold a signature`);
  const bodyBytes = bytes.subarray(0, bytes.length - SIGNATURE_LENGTH);
  const body = decode(pubSubBodyCodec, bodyBytes);
  const signature = bytes.subarray(bytes.length - SIGNATURE_LENGTH);
  if (!(await verify(body.from, signingBytes(network, bodyBytes), signature))) return null;
  return { body, bytes, id: idOf(body) };
}
