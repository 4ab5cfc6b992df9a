/**
 * App messaging and names in memory, for tests of their routes (routes/messaging.test.ts,
 * routes/names.test.ts) and of the `mesh msg` and `mesh names` commands: fixed answers, a record
 * of every call (bytes as hex, names as they came), a settable failure, and the inbox's followers
 * to emit events through and to check that streams end.
 */

import { toHex } from '../encoding/hex.ts';
import { type InboxEntry, InboxEvent, type InboxSnapshot } from '../messaging/inbox.ts';
import type { OutgoingMessage, PublishAnswer, ReplyAnswer, SendAnswer, SendBatchAnswer, SubscribeAnswer } from '../messaging/messaging.ts';
import type { MessagingService } from '../messaging/service.ts';
import type { Recipient } from '../names/names.ts';
import type { NameRecord, NamesService } from '../names/service.ts';
import type { Unsubscribe } from '../web/sse.ts';

export const PEER = 'c3'.repeat(32);
export const PUBLISH_ID = 'f0'.repeat(32);
export const CLAIM_TX = 'a1'.repeat(32);

/** An inbox entry: by default a message from PEER on topic `chat`, payload "hi", seq 3. */
export function inboxEvent(changes: Partial<InboxEntry> & { readonly seq?: number } = {}): InboxEvent {
  const { seq = 3, ...entry } = changes;
  return new InboxEvent({ kind: 'message', from: PEER, topic: 'chat', payload: new TextEncoder().encode('hi'), ...entry }, seq, 1_700_000_000_000);
}

export const INBOX_EVENT = inboxEvent();

/** The name `peer-one`, held by PEER. */
export const NAME: NameRecord = { name: 'peer-one', node_id: PEER, expires_at_height: 210_007 };

export interface InboxFollower {
  readonly after: number | null;
  readonly topic: string | null;
  readonly listener: (event: InboxEvent) => void;
}

const shown = (to: Recipient): string => (typeof to === 'string' ? to : toHex(to));

export class FakeMessaging implements MessagingService, NamesService {
  readonly calls: { method: keyof MessagingService | keyof NamesService; args: unknown[] }[] = [];
  /** Thrown (or rejected with) by every call that can fail, when set. */
  failure: unknown = undefined;
  readonly followers = new Set<InboxFollower>();
  /** What the snapshot holds. */
  events: InboxEvent[] = [INBOX_EVENT];

  #call(method: keyof MessagingService | keyof NamesService, ...args: unknown[]): void {
    this.calls.push({ method, args: args.map((a) => (a instanceof Uint8Array ? toHex(a) : a)) });
    if (this.failure !== undefined) throw this.failure;
  }

  async sendMessage(to: Recipient, topic: string, payload: Uint8Array): Promise<SendAnswer> {
    this.#call('sendMessage', shown(to), topic, payload);
    return { to: typeof to === 'string' ? PEER : toHex(to), topic, seq: 9 };
  }
  async sendMessages(to: Recipient, messages: readonly OutgoingMessage[]): Promise<SendBatchAnswer> {
    this.#call(
      'sendMessages',
      shown(to),
      messages.map((m) => ({ topic: m.topic, payload_hex: toHex(m.payload) })),
    );
    return { to: typeof to === 'string' ? PEER : toHex(to), seqs: messages.map((_, i) => 10 + i) };
  }
  async requestMessage(to: Recipient, topic: string, payload: Uint8Array, timeoutMs: number): Promise<ReplyAnswer> {
    this.#call('requestMessage', shown(to), topic, payload, timeoutMs);
    return { from: typeof to === 'string' ? PEER : toHex(to), topic, payload_hex: 'ff00', elapsed_ms: 12 };
  }
  replyMessage(token: string, payload: Uint8Array): void {
    this.#call('replyMessage', token, payload);
  }
  subscribeTopic(topic: string): SubscribeAnswer {
    this.#call('subscribeTopic', topic);
    return { topic, subscribed: true, subscriptions: 1 };
  }
  async publishMessage(topic: string, payload: Uint8Array): Promise<PublishAnswer> {
    this.#call('publishMessage', topic, payload);
    return { id: PUBLISH_ID, topic, peers: 2 };
  }
  inboxSnapshot(after: number, topic: string | null): InboxSnapshot {
    this.#call('inboxSnapshot', after, topic);
    const messages = this.events.filter((e) => e.seq > after && (topic === null || e.topic === topic));
    return { messages, dropped: 4, last_seq: 3, capacity: { messages: 1_024, bytes: 8 * 1024 * 1024 } };
  }
  /** Delivers the held events after `after` at once, then waits in `followers` for the test. */
  followInbox(after: number | null, topic: string | null, listener: (event: InboxEvent) => void): Unsubscribe {
    this.#call('followInbox', after, topic);
    if (after !== null) for (const e of this.events) if (e.seq > after && (topic === null || e.topic === topic)) listener(e);
    const follower = { after, topic, listener };
    this.followers.add(follower);
    return () => {
      this.followers.delete(follower);
    };
  }
  async claimName(name: string): Promise<{ name: string; tx_id: string }> {
    this.#call('claimName', name);
    return { name, tx_id: CLAIM_TX };
  }
  resolveName(name: string): NameRecord | undefined {
    this.#call('resolveName', name);
    return name === NAME.name ? NAME : undefined;
  }
  listNames(owner: Uint8Array | null): NameRecord[] {
    this.#call('listNames', owner);
    return owner === null || toHex(owner) === PEER ? [NAME] : [];
  }
}
