/**
 * The inbox (node-messaging.md §2 "Inbox", §8): every directed message, request and publish this
 * node takes, in one bounded ring with a broadcast to its followers (the SSE stream).
 *
 * Each entry gets the next `seq` (1, 2, …, for the node's life). The ring keeps the newest entries
 * within a count and a byte bound and drops the oldest to make room; `dropped` counts them, so an
 * app that polls the snapshot knows it missed some (its last seq is below the first one held). The
 * stream hears every entry as it is queued; a follower may start after a seq it already has, and
 * gets what the ring still holds after it first.
 */
import { toHex } from '../encoding/hex.ts';
import type { Unsubscribe } from '../web/sse.ts';

export type InboxKind = 'message' | 'publish' | 'request';

/** One entry, as GET /mesh/messages and /mesh/messages/stream show it (docs/messaging.md). */
export interface InboxEventJson {
  readonly kind: InboxKind;
  readonly seq: number;
  readonly at: number;
  readonly from: string;
  readonly topic: string;
  readonly payload_hex: string;
  readonly reply_token?: string;
}

/**
 * One entry of the inbox. Its payload stays bytes: hex is made only for a reader that wants JSON
 * (`toJSON`, so `JSON.stringify` writes the documented shape), never for one that takes bytes.
 */
export class InboxEvent {
  readonly kind: InboxKind;
  /** Its position in this node's inbox: 1, 2, … for the node's life; the stream's event id. */
  readonly seq: number;
  /** When this node queued it, ms since the epoch. */
  readonly at: number;
  /** The sender (authenticated peer) or the author (signature) as a 64-hex NodeId. */
  readonly from: string;
  readonly topic: string;
  readonly payload: Uint8Array;
  /** A request's token, for POST /mesh/reply. */
  readonly reply_token: string | undefined;

  constructor(entry: InboxEntry, seq: number, at: number) {
    this.kind = entry.kind;
    this.seq = seq;
    this.at = at;
    this.from = entry.from;
    this.topic = entry.topic;
    this.payload = entry.payload;
    this.reply_token = entry.reply_token;
  }

  #hex: string | undefined;

  /** The payload as hex, made once, when a JSON reader first asks. */
  get payload_hex(): string {
    return (this.#hex ??= toHex(this.payload));
  }

  toJSON(): InboxEventJson {
    const { kind, seq, at, from, topic, reply_token } = this;
    return { kind, seq, at, from, topic, payload_hex: this.payload_hex, ...(reply_token === undefined ? {} : { reply_token }) };
  }
}

/** An entry before the inbox gives it its place. */
export interface InboxEntry {
  readonly kind: InboxKind;
  readonly from: string;
  readonly topic: string;
  readonly payload: Uint8Array;
  readonly reply_token?: string;
}

/** How much the ring holds. */
export interface InboxLimits {
  /** Entries. */
  readonly messages: number;
  /** Bytes of payload (each entry counts its payload's bytes and its topic's). */
  readonly bytes: number;
}

export const INBOX_LIMITS: InboxLimits = Object.freeze({ messages: 1_024, bytes: 8 * 1024 * 1024 });

/** GET /mesh/messages. */
export interface InboxSnapshot {
  /** What the ring holds (after `after`, on `topic` when asked), oldest first. */
  readonly messages: InboxEvent[];
  /** Entries the ring dropped, oldest first, to make room since the node started. */
  readonly dropped: number;
  /** The seq of the newest entry (0 before the first). */
  readonly last_seq: number;
  readonly capacity: { readonly messages: number; readonly bytes: number };
}

const sizeOf = (entry: InboxEntry): number => entry.payload.length + entry.topic.length;

export class Inbox {
  readonly limits: InboxLimits;
  readonly #now: () => number;
  readonly #ring: InboxEvent[] = [];
  readonly #listeners = new Set<(event: InboxEvent) => void>();
  #bytes = 0;
  #seq = 0;
  #dropped = 0;

  constructor(now: () => number, limits: Partial<InboxLimits> = {}) {
    this.#now = now;
    this.limits = { ...INBOX_LIMITS, ...limits };
  }

  /** Entries held now. */
  get size(): number {
    return this.#ring.length;
  }

  /** Bytes of payload and topics held now. */
  get bytes(): number {
    return this.#bytes;
  }

  get dropped(): number {
    return this.#dropped;
  }

  /** Queues `entry` (dropping the oldest as needed), tells every follower, and returns it as shown. */
  push(entry: InboxEntry): InboxEvent {
    const event = new InboxEvent(entry, ++this.#seq, this.#now());
    const size = sizeOf(event);
    while (this.#ring.length > 0 && (this.#ring.length >= this.limits.messages || this.#bytes + size > this.limits.bytes)) {
      this.#bytes -= sizeOf(this.#ring.shift()!);
      this.#dropped++;
    }
    this.#ring.push(event);
    this.#bytes += size;
    for (const listener of this.#listeners) {
      try {
        listener(event);
      } catch {
        // A follower's failure is its own: the entry is queued, and the others hear of it.
      }
    }
    return event;
  }

  /** What the ring holds after seq `after` (default: all of it), on `topic` (default: every topic). */
  snapshot(after = 0, topic: string | null = null): InboxSnapshot {
    return {
      messages: this.#held(after, topic),
      dropped: this.#dropped,
      last_seq: this.#seq,
      capacity: { messages: this.limits.messages, bytes: this.limits.bytes },
    };
  }

  /**
   * Calls `listener` with every entry queued from now on (on `topic` only, when given); with
   * `after`, first with what the ring still holds after that seq.
   */
  follow(after: number | null, topic: string | null, listener: (event: InboxEvent) => void): Unsubscribe {
    if (after !== null) for (const event of this.#held(after, topic)) listener(event);
    const filtered = topic === null ? listener : (event: InboxEvent): void => void (event.topic === topic && listener(event));
    this.#listeners.add(filtered);
    return () => {
      this.#listeners.delete(filtered);
    };
  }

  #held(after: number, topic: string | null): InboxEvent[] {
    return this.#ring.filter((event) => event.seq > after && (topic === null || event.topic === topic));
  }
}
