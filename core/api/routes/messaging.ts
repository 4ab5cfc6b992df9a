/**
 * App messaging's routes (node-messaging.md §4–§8; docs/messaging.md): POST /mesh/send,
 * /mesh/request, /mesh/reply, /mesh/subscribe and /mesh/publish, GET /mesh/messages and the
 * /mesh/messages/stream event stream. `to` is a node id or a name.
 *
 * Status codes of the limits: 413 a payload over 64 KiB, 429 too many of this node's requests
 * open, 507 too many subscriptions; 503 a publish no peer would hear. A reply answers 404 for an
 * unknown token, 409 for a second reply, 410 for one after its request gave up.
 */
import { array, integer, object, optional, refine, size, string, type Struct } from 'superstruct';
import { isAppTopic } from '../../net/network.ts';
import type { InboxEvent, InboxSnapshot } from '../../messaging/inbox.ts';
import type { OutgoingMessage, PublishAnswer, ReplyAnswer, SendAnswer, SendBatchAnswer, SubscribeAnswer } from '../../messaging/messaging.ts';
import { BatchStoppedError, DEFAULT_REQUEST_TIMEOUT_MS, MAX_BATCH_MESSAGES, MAX_BATCH_PAYLOAD_BYTES, MAX_REQUEST_TIMEOUT_MS } from '../../messaging/messaging.ts';
import { MAX_PAYLOAD_BYTES } from '../../messaging/wire.ts';
import { REPLY_TOKEN_BYTES } from '../../messaging/replies.ts';
import type { Recipient } from '../../names/names.ts';
import { fromHex } from '../../encoding/hex.ts';
import type { Unsubscribe } from '../../web/sse.ts';
import type { Feature } from '../feature.ts';
import { ApiProblem, toProblem, type ApiProblemCode } from '../problem.ts';
import { badQuery, boundHexField, checkBody, HexBytes, RecipientField, recipientOf } from '../input.ts';

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

/** A body's bound on these routes: a payload of 64 KiB as hex, and room for the other fields. */
export const MESSAGING_BODY_BYTES = 2 * MAX_PAYLOAD_BYTES + 4 * 1024;
/** A batch's bound: its payloads as hex, and room for each message's other fields. */
export const BATCH_BODY_BYTES = 2 * MAX_BATCH_PAYLOAD_BYTES + MAX_BATCH_MESSAGES * 256 + 4 * 1024;
/**
 * Unread bytes of one /mesh/messages/stream connection before it is closed: enough for the whole
 * inbox replayed at once (8 MiB of payload is 16 MiB of hex) and its framing.
 */
export const STREAM_MAX_QUEUED_BYTES = 20 * 1024 * 1024;

const TOPIC_RULE = 'must be an app topic: 1 to 128 visible ASCII characters, without spaces';

const Topic = refine(string(), 'topic', (topic) => isAppTopic(topic) || TOPIC_RULE);
const ReplyToken = refine(string(), 'reply token', (token) => new RegExp(`^[0-9a-f]{${2 * REPLY_TOKEN_BYTES}}$`).test(token) || `must be a reply token: ${2 * REPLY_TOKEN_BYTES} lowercase hex characters`);
const TimeoutMs = refine(integer(), 'timeout', (ms) => (ms >= 1 && ms <= MAX_REQUEST_TIMEOUT_MS) || `must be 1 to ${MAX_REQUEST_TIMEOUT_MS} ms, got ${ms}`);

export const SendBody = object({ to: RecipientField, topic: Topic, payload_hex: HexBytes });
export const SendBatchBody = object({
  to: RecipientField,
  messages: size(array(object({ topic: Topic, payload_hex: HexBytes })), 1, MAX_BATCH_MESSAGES),
});
export const RequestBody = object({ to: RecipientField, topic: Topic, payload_hex: HexBytes, timeout_ms: optional(TimeoutMs) });
export const ReplyBody = object({ reply_token: ReplyToken, payload_hex: HexBytes });
export const SubscribeBody = object({ topic: Topic });
export const PublishBody = object({ topic: Topic, payload_hex: HexBytes });

const INBOX_PARAMS: readonly string[] = ['after', 'topic'];

/**
 * `after` (a seq; default 0, or the stream's Last-Event-ID) and `topic` (default every topic) of
 * the inbox routes; `after` is null on a stream that asked for no replay.
 */
function inboxParams(query: Readonly<Record<string, string>>, lastEventId: string | null): { after: number | null; topic: string | null } {
  const afterText = query.after ?? lastEventId;
  let after: number | null = null;
  if (afterText !== null) {
    after = Number(afterText);
    if (!/^(?:0|[1-9][0-9]*)$/.test(afterText) || !Number.isSafeInteger(after)) {
      throw badQuery(query.after === undefined ? 'Last-Event-ID' : 'after', 'must be a non-negative integer (a seq)');
    }
  }
  const topic = query.topic ?? null;
  if (topic !== null && !isAppTopic(topic)) throw badQuery('topic', TOPIC_RULE);
  return { after, topic };
}

/** A valid body of one of these routes: 413 first for a payload over 64 KiB, then each field's rule. */
function bodyOf<T>(value: unknown, struct: Struct<T, unknown>): T {
  boundHexField(value, 'payload_hex', MAX_PAYLOAD_BYTES);
  return checkBody(value, struct);
}

export const messagingRoutes: Feature<MessagingService> = (service, { json, query, readJson, stream }) => {
  const read = async (request: Request, url: URL): Promise<unknown> => {
    query(url);
    return readJson(request, { maxBytes: MESSAGING_BODY_BYTES });
  };
  return [
    {
      path: '/mesh/send',
      post: async ({ request, url }) => {
        const body = bodyOf(await read(request, url), SendBody);
        return json(await service.sendMessage(recipientOf(body.to), body.topic, fromHex(body.payload_hex)));
      },
    },
    {
      path: '/mesh/send-batch',
      post: async ({ request, url }) => {
        query(url);
        const value = await readJson(request, { maxBytes: BATCH_BODY_BYTES });
        const messages = (value as { messages?: unknown } | null)?.messages;
        if (Array.isArray(messages)) {
          // Said before each entry is checked: a body of a million entries is refused at once.
          if (messages.length > MAX_BATCH_MESSAGES) throw new ApiProblem('invalid-body', `messages: a batch holds 1 to ${MAX_BATCH_MESSAGES} messages, got ${messages.length}`, { errors: [{ name: 'messages', detail: `must hold 1 to ${MAX_BATCH_MESSAGES} messages` }] });
          messages.forEach((message) => boundHexField(message, 'payload_hex', MAX_PAYLOAD_BYTES));
        }
        const body = checkBody(value, SendBatchBody);
        try {
          return json(await service.sendMessages(recipientOf(body.to), body.messages.map((m) => ({ topic: m.topic, payload: fromHex(m.payload_hex) }))));
        } catch (error) {
          if (!(error instanceof BatchStoppedError)) throw error;
          // The problem of the failure, telling which messages were queued.
          const problem = toProblem(error.cause);
          if (problem === undefined) throw error.cause;
          throw new ApiProblem(problem.code as ApiProblemCode, error.message, { ...problem.extra, queued: error.queued, seqs: error.seqs }, { ...problem.headers });
        }
      },
    },
    {
      path: '/mesh/request',
      post: async ({ request, url }) => {
        const body = bodyOf(await read(request, url), RequestBody);
        const timeoutMs = body.timeout_ms ?? DEFAULT_REQUEST_TIMEOUT_MS;
        return json(await service.requestMessage(recipientOf(body.to), body.topic, fromHex(body.payload_hex), timeoutMs));
      },
    },
    {
      path: '/mesh/reply',
      post: async ({ request, url }) => {
        const body = bodyOf(await read(request, url), ReplyBody);
        service.replyMessage(body.reply_token, fromHex(body.payload_hex));
        return new Response(null, { status: 204 });
      },
    },
    {
      path: '/mesh/subscribe',
      post: async ({ request, url }) => {
        const body = bodyOf(await read(request, url), SubscribeBody);
        return json(service.subscribeTopic(body.topic));
      },
    },
    {
      path: '/mesh/publish',
      post: async ({ request, url }) => {
        const body = bodyOf(await read(request, url), PublishBody);
        return json(await service.publishMessage(body.topic, fromHex(body.payload_hex)), 202);
      },
    },
    {
      path: '/mesh/messages/stream',
      get: (call) => {
        const { after, topic } = inboxParams(query(call.url, INBOX_PARAMS), call.request.headers.get('last-event-id'));
        return stream<InboxEvent>(call, (listener) => service.followInbox(after, topic, listener), {
          allowed: INBOX_PARAMS,
          id: (event) => event.seq,
          maxQueuedBytes: STREAM_MAX_QUEUED_BYTES,
        });
      },
    },
    {
      path: '/mesh/messages',
      get: ({ url }) => {
        const { after, topic } = inboxParams(query(url, INBOX_PARAMS), null);
        return json(service.inboxSnapshot(after ?? 0, topic));
      },
    },
  ];
};
