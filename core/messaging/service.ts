/**
 * App messaging as a service of the node (docs/messaging.md): the routes' face of Messaging, with
 * recipients given as a NodeId or a name resolved on this node's chain.
 */
import type { Chain } from '../chain/chain.ts';
import type { SigningKey } from '../crypto/ed25519.ts';
import type { Random } from '../crypto/random.ts';
import type { Startable } from '../lifecycle.ts';
import { type Recipient, recipientNode } from '../names/names.ts';
import type { Network } from '../net/network.ts';
import type { Clock } from '../time/clock.ts';
import type { Unsubscribe } from '../web/sse.ts';
import type { InboxEvent, InboxSnapshot } from './inbox.ts';
import {
  Messaging,
  type MessagingLimits,
  type OutgoingMessage,
  type PublishAnswer,
  type ReplyAnswer,
  type SendAnswer,
  type SendBatchAnswer,
  type SubscribeAnswer,
} from './messaging.ts';

export interface MessagingService {
  /** Sends a directed message; resolves with the receiver's acknowledgement once it has queued it. */
  sendMessage(to: Recipient, topic: string, payload: Uint8Array): Promise<SendAnswer>;
  /** Sends messages in order; a failure part-way after sending is a BatchStoppedError. */
  sendMessages(to: Recipient, messages: readonly OutgoingMessage[]): Promise<SendBatchAnswer>;
  /** Sends a request and resolves with its reply; a timeout is NetworkError 'timeout' (504). */
  requestMessage(to: Recipient, topic: string, payload: Uint8Array, timeoutMs: number): Promise<ReplyAnswer>;
  /** Answers a request that reached this node (MessagingError 404, 409, 410 when it cannot). */
  replyMessage(token: string, payload: Uint8Array): void;
  subscribeTopic(topic: string): SubscribeAnswer;
  publishMessage(topic: string, payload: Uint8Array): Promise<PublishAnswer>;
  /** What the inbox holds after `after`, on `topic` when not null. */
  inboxSnapshot(after: number, topic: string | null): InboxSnapshot;
  /** Every entry from now on (on `topic` when not null); with `after`, what the ring holds after it first. */
  followInbox(after: number | null, topic: string | null, listener: (event: InboxEvent) => void): Unsubscribe;
}

export interface MessagingComponents {
  readonly key: SigningKey;
  readonly chain: Chain;
  readonly network: Network;
  readonly clock: Clock;
  readonly random: Random;
  readonly log: (line: string) => void;
}

export class MessagingFeature implements MessagingService, Startable {
  readonly messaging: Messaging;
  readonly #chain: Chain;

  constructor(components: MessagingComponents, limits?: Partial<MessagingLimits>) {
    this.#chain = components.chain;
    this.messaging = new Messaging({
      network: components.network,
      key: components.key,
      networkName: components.chain.params.network,
      clock: components.clock,
      random: components.random,
      log: components.log,
      ...(limits === undefined ? {} : { limits }),
    });
  }

  start(): void {
    this.messaging.start();
  }

  stop(): void {
    this.messaging.stop();
  }

  sendMessage(to: Recipient, topic: string, payload: Uint8Array): Promise<SendAnswer> {
    return this.messaging.send(recipientNode(this.#chain, to), topic, payload);
  }

  sendMessages(to: Recipient, messages: readonly OutgoingMessage[]): Promise<SendBatchAnswer> {
    return this.messaging.sendMany(recipientNode(this.#chain, to), messages);
  }

  requestMessage(to: Recipient, topic: string, payload: Uint8Array, timeoutMs: number): Promise<ReplyAnswer> {
    return this.messaging.request(recipientNode(this.#chain, to), topic, payload, timeoutMs);
  }

  replyMessage(token: string, payload: Uint8Array): void {
    this.messaging.reply(token, payload);
  }

  subscribeTopic(topic: string): SubscribeAnswer {
    return this.messaging.subscribe(topic);
  }

  publishMessage(topic: string, payload: Uint8Array): Promise<PublishAnswer> {
    return this.messaging.publish(topic, payload);
  }

  inboxSnapshot(after: number, topic: string | null): InboxSnapshot {
    return this.messaging.inbox.snapshot(after, topic);
  }

  followInbox(after: number | null, topic: string | null, listener: (event: InboxEvent) => void): Unsubscribe {
    return this.messaging.inbox.follow(after, topic, listener);
  }
}

/** Directed messages, request and reply, pub/sub and the inbox (`limits`: smaller in tests). */
export function messagingService(limits?: Partial<MessagingLimits>): (components: MessagingComponents) => MessagingFeature {
  return (components) => new MessagingFeature(components, limits);
}
