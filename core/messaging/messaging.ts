/**
 * App messaging on a node (node-messaging.md §1–§8, docs/messaging.md): directed messages,
 * request and reply, and pub/sub, all landing in one inbox that apps read as a stream.
 *
 * Authentication is the node's: a directed message or request is taken only when its `from_node`
 * is the peer the connection authenticated (a forged one is refused, counted against the peer,
 * and never reaches the inbox); a publish only when its author's signature verifies, once per
 * publish however many relays bring it. Authorization is the app's: it reads `from` and decides.
 * Payloads are bytes the node never parses.
 */
import type { SigningKey } from '../crypto/ed25519.ts';
import type { Random } from '../crypto/random.ts';
import { bytesEqual } from '../encoding/bytes.ts';
import { decode, encode } from '../encoding/codec.ts';
import { toHex } from '../encoding/hex.ts';
import { clip } from '../encoding/text.ts';
import { DecodeError } from '../errors.ts';
import { RequestTimeoutError } from '../net/errors.ts';
import { appTopic, type GossipMessage, isAppTopic, type Network, type RpcRequest, type Verdict } from '../net/network.ts';
import type { Clock } from '../time/clock.ts';
import { MessagingError } from './errors.ts';
import { INBOX_LIMITS, Inbox, type InboxLimits } from './inbox.ts';
import { MessageLanes } from './lanes.ts';
import { HeldRequests } from './replies.ts';
import {
  answerOf,
  appAckCodec,
  appMessageCodec,
  appReplyCodec,
  appRequestCodec,
  MAX_DETAIL_BYTES,
  MAX_FRAME_BYTES,
  MAX_PAYLOAD_BYTES,
  MESSAGING_RPC,
  NONCE_BYTES,
  openPubSub,
  type Refusal,
  signPubSub,
} from './wire.ts';

/** What one node allows at once (docs/messaging.md "Limits and errors"). */
export interface MessagingLimits extends InboxLimits {
  /** This node's requests waiting for their replies (429 past it). */
  readonly openRequests: number;
  /** Requests from peers waiting for this node's apps to reply (the peer hears "busy" past it). */
  readonly heldRequests: number;
  /** Topics subscribed (507 past it). */
  readonly subscriptions: number;
  /**
   * Publish ids kept to suppress duplicates, each while its publish could still be taken (its age
   * within PUBLISH_MAX_AGE_MS): more than a busy node takes in that time. Full of live ones, the
   * node takes no new publish rather than forget one, which a replay could then pass.
   */
  readonly seenPublishes: number;
}

export const MESSAGING_LIMITS: Omit<MessagingLimits, keyof InboxLimits> = Object.freeze({
  openRequests: 256,
  heldRequests: 256,
  subscriptions: 64,
  seenPublishes: 200_000,
});

/** How long a directed message (or a batch) waits for the receiver's acknowledgement. */
export const SEND_TIMEOUT_MS = 10_000;
/** Messages in one batch, and their payloads' bytes in all. */
export const MAX_BATCH_MESSAGES = 1_024;
export const MAX_BATCH_PAYLOAD_BYTES = 4 * 1024 * 1024;
/** How long a request waits for its reply unless the caller says otherwise, and the most it may. */
export const DEFAULT_REQUEST_TIMEOUT_MS = 10_000;
export const MAX_REQUEST_TIMEOUT_MS = 60_000;
/** A publish older than this (by its author's clock), or further ahead, is not taken: a replay long after. */
export const PUBLISH_MAX_AGE_MS = 5 * 60_000;
export const PUBLISH_MAX_AHEAD_MS = 60_000;
/** Of the requests held for this node's replies, the share one peer may hold. */
const HELD_PER_PEER_SHARE = 8;

/** A refusal's reason codes on the wire. */
const REASON = { forged: 'forged-sender', topic: 'bad-topic', busy: 'busy', gone: 'gone' } as const;

export interface MessagingOptions {
  readonly network: Network;
  readonly key: SigningKey;
  /** The chain's network name, signed into every publish. */
  readonly networkName: string;
  readonly clock: Clock;
  readonly random: Random;
  readonly log: (line: string) => void;
  readonly limits?: Partial<MessagingLimits>;
}

/** POST /mesh/send's answer: the receiver's acknowledgement. */
export interface SendAnswer {
  readonly to: string;
  readonly topic: string;
  /** The message's seq in the receiver's inbox. */
  readonly seq: number;
}

/** One message of a batch. */
export interface OutgoingMessage {
  readonly topic: string;
  readonly payload: Uint8Array;
}

/** POST /mesh/send-batch's answer: each message's seq in the receiver's inbox, in order. */
export interface SendBatchAnswer {
  readonly to: string;
  readonly seqs: number[];
}

/**
 * A batch that did not go through whole, after its messages were sent. `seqs` has an entry for
 * each message the receiver answered, in order: its seq when it queued it, null when it refused
 * it; the messages after those (the lane broke, or the acknowledgements stopped) may or may not
 * have been queued. `cause` says why: the lane's failure, else the first refusal.
 */
export class BatchStoppedError extends Error {
  override readonly cause: Error;
  readonly seqs: readonly (number | null)[];

  /** How many of the batch the receiver queued. */
  readonly queued: number;

  constructor(cause: Error, seqs: readonly (number | null)[], total: number) {
    const queued = seqs.filter((seq) => seq !== null).length;
    super(`${queued} of the batch's ${total} messages were queued (${seqs.length} answered): ${cause.message}`);
    this.name = 'BatchStoppedError';
    this.cause = cause;
    this.seqs = seqs;
    this.queued = queued;
  }
}

/** POST /mesh/request's answer: the reply. */
export interface ReplyAnswer {
  readonly from: string;
  readonly topic: string;
  readonly payload_hex: string;
  /** From sending the request to its reply. */
  readonly elapsed_ms: number;
}

/** POST /mesh/publish's answer. */
export interface PublishAnswer {
  /** The publish's id (SHA-256 of its author and nonce), the same on every subscriber. */
  readonly id: string;
  readonly topic: string;
  /** Connected peers subscribed to the topic when it was sent. */
  readonly peers: number;
}

/** POST /mesh/subscribe's answer. */
export interface SubscribeAnswer {
  readonly topic: string;
  /** False when the node was subscribed already. */
  readonly subscribed: boolean;
  readonly subscriptions: number;
}

export class Messaging {
  readonly inbox: Inbox;
  readonly limits: MessagingLimits;
  readonly #o: MessagingOptions;
  readonly #self: Uint8Array;
  readonly #held: HeldRequests;
  readonly #lanes: MessageLanes;
  readonly #subscribed = new Set<string>();
  // Publish id → its author's time, kept while a copy could still pass the age check.
  readonly #seen = new Map<string, number>();
  readonly #heldBy = new Map<string, number>();
  readonly #unserve: (() => void)[] = [];
  #open = 0;

  constructor(options: MessagingOptions) {
    this.#o = options;
    this.#self = options.key.publicKey;
    this.limits = { ...INBOX_LIMITS, ...MESSAGING_LIMITS, ...options.limits };
    this.inbox = new Inbox(() => options.clock.now(), { messages: this.limits.messages, bytes: this.limits.bytes });
    this.#held = new HeldRequests(options.clock, options.random);
    this.#lanes = new MessageLanes({ network: options.network, clock: options.clock, log: options.log });
  }

  /** Serves directed messages (lanes and the RPC) and requests. */
  start(): void {
    const { network } = this.#o;
    const bounds = { maxRequestBytes: MAX_FRAME_BYTES, maxResponseBytes: MAX_FRAME_BYTES, relayed: true };
    this.#unserve.push(this.#lanes.serve((peer, data) => this.#onMessage(peer, data)));
    this.#unserve.push(network.serve(MESSAGING_RPC.request, (request) => this.#onRequest(request), bounds));
  }

  /** Stops serving; held requests end unanswered. */
  stop(): void {
    for (const unserve of this.#unserve.splice(0)) unserve();
    this.#lanes.stop();
    this.#held.close();
  }

  /** Topics subscribed, in the order they were. */
  get topics(): string[] {
    return [...this.#subscribed];
  }

  /** Lanes this node has open to peers for its directed messages. */
  get openLanes(): number {
    return this.#lanes.open;
  }

  /** Requests from peers waiting for a reply here. */
  get heldRequests(): number {
    return this.#held.size;
  }

  // ---- directed messages ----

  /**
   * Sends a message to `to` and resolves once its node has queued it. Throws MessagingError
   * ('self', 'payload-too-large', 'refused'), NetworkError (unreachable, timeout, busy, …).
   */
  async send(to: Uint8Array, topic: string, payload: Uint8Array): Promise<SendAnswer> {
    try {
      const { seqs } = await this.sendMany(to, [{ topic, payload }]);
      return { to: toHex(to), topic, seq: seqs[0]! };
    } catch (error) {
      throw error instanceof BatchStoppedError ? error.cause : error;
    }
  }

  /**
   * Sends `messages` to `to`, in order, and resolves once its node has queued them all. Checks
   * them all first (MessagingError 'self', 'payload-too-large', 'too-many-messages'; NetworkError
   * 'invalid-name'), sending none of a batch with a bad one; fails at once on errors of reaching
   * the peer. Once sent, a batch not queued whole is a BatchStoppedError, saying which were.
   */
  async sendMany(to: Uint8Array, messages: readonly OutgoingMessage[]): Promise<SendBatchAnswer> {
    if (messages.length === 0 || messages.length > MAX_BATCH_MESSAGES)
      throw new MessagingError('too-many-messages', `a batch holds 1 to ${MAX_BATCH_MESSAGES} messages, got ${messages.length}`);
    let bytes = 0;
    for (const { topic, payload } of messages) {
      this.#checkOutgoing(to, topic, payload);
      bytes += payload.length;
    }
    if (bytes > MAX_BATCH_PAYLOAD_BYTES)
      throw new MessagingError('payload-too-large', `a batch's payloads are at most ${MAX_BATCH_PAYLOAD_BYTES} bytes in all, got ${bytes}`);
    const encoded = messages.map(({ topic, payload }) => encode(appMessageCodec, { from_node: this.#self, topic, payload }));
    const { acks, error } = await this.#lanes.send(to, encoded, SEND_TIMEOUT_MS);
    const seqs = acks.map((ack) => (ack.answer === 'Queued' ? ack.seq : null));
    const refused = acks.find((ack) => ack.answer === 'Refused');
    const cause = error ?? (refused?.answer === 'Refused' ? this.#refusal(to, refused) : null);
    if (cause !== null) throw new BatchStoppedError(cause, seqs, messages.length);
    return { to: toHex(to), seqs: seqs as number[] };
  }

  /** A message that arrived (on a lane or as the RPC): queued, or refused; bytes that are not a message throw DecodeError. */
  #onMessage(peer: Uint8Array, data: Uint8Array): Uint8Array {
    const message = decode(appMessageCodec, data);
    const refusal = this.#refuseIncoming(peer, message.from_node, message.topic);
    if (refusal !== null) return encode(appAckCodec, { answer: 'Refused', ...refusal });
    const event = this.inbox.push({ kind: 'message', from: toHex(peer), topic: message.topic, payload: message.payload });
    return encode(appAckCodec, { answer: 'Queued', seq: event.seq });
  }

  // ---- request and reply ----

  /**
   * Sends a request to `to` and resolves with its reply, or fails when `timeoutMs` passes first
   * (RequestTimeoutError, 504: the peer may still have acted on it). Also MessagingError
   * 'too-many-requests' (429), 'peer-busy' (503), and the errors of `send`.
   */
  async request(to: Uint8Array, topic: string, payload: Uint8Array, timeoutMs: number = DEFAULT_REQUEST_TIMEOUT_MS): Promise<ReplyAnswer> {
    this.#checkOutgoing(to, topic, payload);
    if (!Number.isSafeInteger(timeoutMs) || timeoutMs < 1 || timeoutMs > MAX_REQUEST_TIMEOUT_MS) {
      throw new RangeError(`a request's timeout is 1 to ${MAX_REQUEST_TIMEOUT_MS} ms, got ${timeoutMs}`);
    }
    if (this.#open >= this.limits.openRequests) {
      throw new MessagingError(
        'too-many-requests',
        `${this.#open} requests of this node wait for their replies, as many as it allows; retry when one is answered`,
      );
    }
    this.#open++;
    const started = this.#o.clock.now();
    try {
      const bytes = encode(appRequestCodec, { from_node: this.#self, topic, payload, timeout_ms: timeoutMs });
      const options = { timeoutMs, maxRequestBytes: MAX_FRAME_BYTES, maxResponseBytes: MAX_FRAME_BYTES, relayed: true };
      const answer = answerOf(appReplyCodec, to, await this.#o.network.request(to, MESSAGING_RPC.request, bytes, options));
      if (answer.answer === 'Refused') {
        // The receiver's own clock ran out first (it started later, so this is rare): a timeout all the same.
        if (answer.reason === REASON.gone) throw new RequestTimeoutError(toHex(to), MESSAGING_RPC.request, timeoutMs);
        throw this.#refusal(to, answer);
      }
      return { from: toHex(to), topic, payload_hex: toHex(answer.payload), elapsed_ms: this.#o.clock.now() - started };
    } finally {
      this.#open--;
    }
  }

  async #onRequest({ peer, data, signal }: RpcRequest): Promise<Uint8Array> {
    const request = decode(appRequestCodec, data);
    const refusal = this.#refuseIncoming(peer, request.from_node, request.topic);
    if (refusal !== null) return encode(appReplyCodec, { answer: 'Refused', ...refusal });
    if (this.#held.size >= this.limits.heldRequests) {
      return encode(appReplyCodec, {
        answer: 'Refused',
        reason: REASON.busy,
        detail: `${this.#held.size} requests wait for this node's replies, as many as it holds`,
      });
    }
    // A few peers cannot take every slot from the rest.
    const from = toHex(peer);
    const perPeer = Math.max(1, Math.floor(this.limits.heldRequests / HELD_PER_PEER_SHARE));
    const mine = this.#heldBy.get(from) ?? 0;
    if (mine >= perPeer) {
      return encode(appReplyCodec, {
        answer: 'Refused',
        reason: REASON.busy,
        detail: `${mine} requests of this peer wait for this node's replies, as many as one peer may have`,
      });
    }
    this.#heldBy.set(from, mine + 1);
    const timeoutMs = Math.min(Math.max(request.timeout_ms, 1), MAX_REQUEST_TIMEOUT_MS);
    let outcome;
    try {
      outcome = await this.#held.hold(timeoutMs, signal, (token) => {
        this.inbox.push({ kind: 'request', from, topic: request.topic, payload: request.payload, reply_token: token });
      });
    } finally {
      const left = (this.#heldBy.get(from) ?? 1) - 1;
      if (left > 0) this.#heldBy.set(from, left);
      else this.#heldBy.delete(from);
    }
    if ('payload' in outcome) return encode(appReplyCodec, { answer: 'Reply', payload: outcome.payload });
    return encode(appReplyCodec, { answer: 'Refused', reason: REASON.gone, detail: clip(outcome.gone, MAX_DETAIL_BYTES) });
  }

  /**
   * Answers a held request. Throws MessagingError 'payload-too-large' (413), 'unknown-reply-token'
   * (404), 'reply-too-late' (410), 'already-replied' (409): nothing is sent then.
   */
  reply(token: string, payload: Uint8Array): void {
    this.#checkPayload(payload);
    this.#held.reply(token, payload);
  }

  // ---- pub/sub ----

  /** Subscribes to `topic` for the node's life. Throws NetworkError 'invalid-name' (400), MessagingError 'too-many-subscriptions' (507). */
  subscribe(topic: string): SubscribeAnswer {
    const gossip = appTopic(topic);
    if (this.#subscribed.has(topic)) return { topic, subscribed: false, subscriptions: this.#subscribed.size };
    if (this.#subscribed.size >= this.limits.subscriptions) {
      throw new MessagingError(
        'too-many-subscriptions',
        `the node is subscribed to ${this.#subscribed.size} topics, as many as it allows (subscriptions last for the node's life)`,
      );
    }
    this.#subscribed.add(topic);
    this.#o.network.handle(gossip, (message) => this.#onPublish(topic, message));
    return { topic, subscribed: true, subscriptions: this.#subscribed.size };
  }

  /**
   * Signs `payload` and publishes it on `topic`. Throws MessagingError 'payload-too-large' (413),
   * 'no-peers' (503: no connected peer is subscribed, nothing was sent), NetworkError 'invalid-name'.
   */
  async publish(topic: string, payload: Uint8Array): Promise<PublishAnswer> {
    const gossip = appTopic(topic);
    this.#checkPayload(payload);
    const peers = this.#o.network.subscribers(gossip);
    if (peers === 0) throw new MessagingError('no-peers', `no connected peer is subscribed to ${gossip}; nothing was sent`);
    const { clock, random, key, networkName } = this.#o;
    const signed = await signPubSub({ from: this.#self, topic, payload, nonce: random.bytes(NONCE_BYTES), at_ms: clock.now() }, key, networkName);
    // A copy that comes back (relayed, or replayed by someone) is not this node's news.
    this.#remember(signed.id, signed.body.at_ms, signed.body.at_ms);
    await this.#o.network.publish(gossip, signed.bytes);
    return { id: signed.id, topic, peers };
  }

  async #onPublish(topic: string, message: GossipMessage): Promise<Verdict> {
    let signed;
    try {
      signed = await openPubSub(message.data, this.#o.networkName);
    } catch (error) {
      if (error instanceof DecodeError) return 'reject';
      throw error;
    }
    // A bad signature, or a message moved to another topic, is invalid whoever relays it.
    if (signed === null || signed.body.topic !== topic) return 'reject';
    if (this.#seen.has(signed.id)) return 'ignore';
    const now = this.#o.clock.now();
    if (signed.body.at_ms < now - PUBLISH_MAX_AGE_MS || signed.body.at_ms > now + PUBLISH_MAX_AHEAD_MS) return 'ignore';
    if (!this.#remember(signed.id, signed.body.at_ms, now)) return 'ignore';
    this.inbox.push({ kind: 'publish', from: toHex(signed.body.from), topic, payload: signed.body.payload });
    return 'accept';
  }

  /**
   * Keeps `id` while its publish could pass the age check; false (the publish is not taken) when
   * `seenPublishes` live ids are kept already: forgetting one would let its replay through.
   */
  #remember(id: string, atMs: number, now: number): boolean {
    if (this.#seen.size >= this.limits.seenPublishes) {
      const cutoff = now - PUBLISH_MAX_AGE_MS;
      for (const [kept, at] of this.#seen) if (at < cutoff) this.#seen.delete(kept);
      if (this.#seen.size >= this.limits.seenPublishes) {
        this.#o.log(
          `messaging: ${this.#seen.size} publishes taken in the last ${PUBLISH_MAX_AGE_MS / 60_000} minutes; new ones are ignored until older ones age out`,
        );
        return false;
      }
    }
    this.#seen.set(id, atMs);
    return true;
  }

  // ---- checks ----

  #checkPayload(payload: Uint8Array): void {
    if (payload.length > MAX_PAYLOAD_BYTES)
      throw new MessagingError('payload-too-large', `a payload is at most ${MAX_PAYLOAD_BYTES} bytes, got ${payload.length}`);
  }

  #checkOutgoing(to: Uint8Array, topic: string, payload: Uint8Array): void {
    appTopic(topic);
    this.#checkPayload(payload);
    if (bytesEqual(to, this.#self)) throw new MessagingError('self', 'to is this node: messages and requests go to another node');
  }

  /** Why an incoming message or request is refused, or null: its sender must be the peer that sent it. */
  #refuseIncoming(peer: Uint8Array, from: Uint8Array, topic: string): Refusal | null {
    if (!bytesEqual(from, peer)) {
      this.#o.log(`messaging: ${toHex(peer).slice(0, 16)}… sent a message claiming to be from ${toHex(from).slice(0, 16)}…; dropped`);
      this.#o.network.penalise(peer, 'a message with a forged from_node');
      return { reason: REASON.forged, detail: 'from_node is not the peer that sent the message' };
    }
    if (!isAppTopic(topic)) return { reason: REASON.topic, detail: 'the topic is not 1 to 128 visible ASCII characters' };
    return null;
  }

  #refusal(to: Uint8Array, refusal: Refusal): MessagingError {
    const code = refusal.reason === REASON.busy ? 'peer-busy' : 'refused';
    return new MessagingError(code, `${toHex(to).slice(0, 16)}… refused (${refusal.reason}): ${refusal.detail}`);
  }
}
