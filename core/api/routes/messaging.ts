/**
 * App messaging's routes (node-messaging.md §4–§8; docs/messaging.md): POST /mesh/send,
 * /mesh/request, /mesh/reply, /mesh/subscribe and /mesh/publish, GET /mesh/messages and the
 * /mesh/messages/stream event stream. `to` is a node id or a name.
 *
 * Status codes of the limits: 413 a payload over 64 KiB, 429 too many of this node's requests
 * open, 507 too many subscriptions; 503 a publish no peer would hear. A reply answers 404 for an
 * unknown token, 409 for a second reply, 410 for one after its request gave up.
 */
import { array, object, optional, refine, type Struct, size, string, validate } from 'superstruct';
import {
  array as arrayCodec,
  bytes32,
  decode,
  encodeFrame,
  fixedBytes,
  option as optionCodec,
  struct as structCodec,
  u8,
  uint53,
  utf8,
  varBytes,
} from '../../encoding/codec.ts';
import { fromHex, toHex } from '../../encoding/hex.ts';
import { DecodeError, InvalidEncodingError } from '../../errors.ts';
import type { InboxEvent, InboxEventJson, InboxKind } from '../../messaging/inbox.ts';
import type { OutgoingMessage } from '../../messaging/messaging.ts';
import {
  BatchStoppedError,
  DEFAULT_REQUEST_TIMEOUT_MS,
  MAX_BATCH_MESSAGES,
  MAX_BATCH_PAYLOAD_BYTES,
  MAX_REQUEST_TIMEOUT_MS,
} from '../../messaging/messaging.ts';
import { REPLY_TOKEN_BYTES } from '../../messaging/replies.ts';
import type { MessagingService } from '../../messaging/service.ts';
import { MAX_FRAME_BYTES, MAX_PAYLOAD_BYTES, MAX_TOPIC_BYTES } from '../../messaging/wire.ts';
import { FrameReader } from '../../net/frames.ts';
import { isAppTopic } from '../../net/network.ts';
import type { EventFormat } from '../../web/sse.ts';
import { BYTES_TYPE, isBytesType } from '../body.ts';
import type { Feature } from '../feature.ts';
import { badQuery, boundHexField, checkBody, HexBytes, MAX_LISTED_ERRORS, RecipientField, recipientOf, wholeInteger } from '../input.ts';
import { ApiProblem, type ApiProblemCode, toProblem } from '../problem.ts';

/** A body's bound on these routes: a payload of 64 KiB as hex, and room for the other fields. */
export const MESSAGING_BODY_BYTES = 2 * MAX_PAYLOAD_BYTES + 4 * 1024;
/** A batch's bound: its payloads as hex, and room for each message's other fields. */
export const BATCH_BODY_BYTES = 2 * MAX_BATCH_PAYLOAD_BYTES + MAX_BATCH_MESSAGES * 256 + 4 * 1024;
/**
 * A batch's bound as bytes (`application/octet-stream`): its payloads, and each message's count,
 * topic and length prefixes.
 */
export const BATCH_BYTES_BODY_BYTES = MAX_BATCH_PAYLOAD_BYTES + MAX_BATCH_MESSAGES * (4 + MAX_TOPIC_BYTES + 4) + 4;

/**
 * POST /mesh/send-batch's body as bytes (docs/messaging.md "Batches as bytes"), in the canonical
 * encoding (docs/encoding.md): a u32 count of messages, then each message's topic (u32 length,
 * UTF-8) and payload (u32 length, bytes). For apps that move many messages: no JSON, no hex.
 * A payload may decode up to the body's bound so that one over 64 KiB is refused as too large (413),
 * not as malformed.
 */
export const batchBytesCodec = arrayCodec(
  structCodec({ topic: utf8(MAX_TOPIC_BYTES), payload: varBytes(BATCH_BYTES_BODY_BYTES) }, 'message'),
  MAX_BATCH_MESSAGES,
);

/** The kinds of inbox entry, by their byte in the binary stream. */
export const INBOX_KINDS: readonly InboxKind[] = ['message', 'request', 'publish'];

/**
 * One inbox entry in the binary form of /mesh/messages/stream (docs/messaging.md "The stream as
 * bytes"), in the canonical encoding: `kind` is INBOX_KINDS' index, `from` the 32-byte node id,
 * `reply_token` present on a request only.
 */
export const inboxEventCodec = structCodec(
  {
    kind: u8,
    seq: uint53,
    at: uint53,
    from: bytes32,
    topic: utf8(MAX_TOPIC_BYTES),
    payload: varBytes(MAX_PAYLOAD_BYTES),
    reply_token: optionCodec(fixedBytes(REPLY_TOKEN_BYTES)),
  },
  'InboxEvent',
);

/** A frame of no bytes: the binary stream's keep-alive. */
const EMPTY_FRAME = new Uint8Array(4);

/**
 * The binary form of the inbox's stream: each entry one frame (a u32 big-endian length, then the
 * entry's inboxEventCodec encoding), an empty frame as the keep-alive. A stream cut for a slow
 * reader just ends; the reader resumes with `after`.
 */
export const inboxFrames: EventFormat<InboxEvent> = {
  contentType: BYTES_TYPE,
  frame: (event) =>
    encodeFrame(inboxEventCodec, {
      kind: INBOX_KINDS.indexOf(event.kind),
      seq: event.seq,
      at: event.at,
      from: fromHex(event.from, 32),
      topic: event.topic,
      payload: event.payload,
      reply_token: event.reply_token === undefined ? null : fromHex(event.reply_token, REPLY_TOKEN_BYTES),
    }),
  keepAlive: EMPTY_FRAME,
  overflow: () => new Uint8Array(0),
  end: new Uint8Array(0),
};

/** An entry as the binary stream carries it, decoded. */
export type InboxFrame = Omit<InboxEventJson, 'payload_hex'> & { readonly payload: Uint8Array };

/**
 * The entries of a binary /mesh/messages/stream body as they arrive (keep-alives skipped), for
 * clients written in TypeScript; throws DecodeError on bytes that are not the stream's frames,
 * a frame cut short at the end included.
 */
export async function* inboxFramesOf(body: ReadableStream<Uint8Array>): AsyncGenerator<InboxFrame> {
  const frames = new FrameReader(MAX_FRAME_BYTES);
  // A reader, not `for await` over the stream: every browser has the one, not all the other.
  const reader = body.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      for (const frame of frames.push(value)) {
        if (frame.length > 0) yield inboxFrameOf(frame);
      }
    }
  } finally {
    reader.releaseLock();
  }
  if (frames.buffered > 0) throw new InvalidEncodingError('truncated', `the stream ended inside a frame (${frames.buffered} bytes of it)`);
}

function inboxFrameOf(frame: Uint8Array): InboxFrame {
  const e = decode(inboxEventCodec, frame);
  const kind = INBOX_KINDS[e.kind];
  if (kind === undefined) throw new InvalidEncodingError('out-of-range', `an inbox entry's kind is 0 to ${INBOX_KINDS.length - 1}, got ${e.kind}`);
  return {
    kind,
    seq: e.seq,
    at: e.at,
    from: toHex(e.from),
    topic: e.topic,
    payload: e.payload,
    ...(e.reply_token === null ? {} : { reply_token: toHex(e.reply_token) }),
  };
}

/** True when an Accept header names the binary stream's media type with a weight above 0. */
function acceptsBytes(accept: string | null): boolean {
  if (accept === null) return false;
  return accept.split(',').some((range) => {
    const [type, ...params] = range.split(';').map((part) => part.trim().toLowerCase());
    const q = params.find((param) => param.startsWith('q='));
    return type === BYTES_TYPE && (q === undefined || Number(q.slice(2)) > 0);
  });
}

/**
 * Unread bytes of one /mesh/messages/stream connection before it is closed: enough for the whole
 * inbox replayed at once (8 MiB of payload is 16 MiB of hex) and its framing.
 */
export const STREAM_MAX_QUEUED_BYTES = 20 * 1024 * 1024;

const TOPIC_RULE = 'must be an app topic: 1 to 128 visible ASCII characters, without spaces';

const Topic = refine(string(), 'topic', (topic) => isAppTopic(topic) || TOPIC_RULE);
const ReplyToken = refine(
  string(),
  'reply token',
  (token) => new RegExp(`^[0-9a-f]{${2 * REPLY_TOKEN_BYTES}}$`).test(token) || `must be a reply token: ${2 * REPLY_TOKEN_BYTES} lowercase hex characters`,
);
const TimeoutMs = refine(
  wholeInteger(),
  'timeout',
  (ms) => (ms >= 1 && ms <= MAX_REQUEST_TIMEOUT_MS) || `must be 1 to ${MAX_REQUEST_TIMEOUT_MS} ms, got ${ms}`,
);

export const SendBody = object({ to: RecipientField, topic: Topic, payload_hex: HexBytes });
export const SendBatchBody = object({
  to: RecipientField,
  messages: size(array(object({ topic: Topic, payload_hex: HexBytes })), 1, MAX_BATCH_MESSAGES),
});
export const RequestBody = object({ to: RecipientField, topic: Topic, payload_hex: HexBytes, timeout_ms: optional(TimeoutMs) });
export const ReplyBody = object({ reply_token: ReplyToken, payload_hex: HexBytes });
export const SubscribeBody = object({ topic: Topic });
export const PublishBody = object({ topic: Topic, payload_hex: HexBytes });

const validateRecipient = (value: string): ReturnType<typeof validate> => validate(value, RecipientField);

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

/** A batch of `count` messages, too few or too many: 400 naming `messages`. */
function batchSizeProblem(count: number): ApiProblem {
  const rule = `must hold 1 to ${MAX_BATCH_MESSAGES} messages`;
  return new ApiProblem('invalid-body', `messages: a batch holds 1 to ${MAX_BATCH_MESSAGES} messages, got ${count}`, {
    errors: [{ name: 'messages', detail: rule }],
  });
}

/** The messages of a batch sent as bytes: 400 for bytes that are not a batch or a bad topic, 413 for a payload over 64 KiB. */
function batchFromBytes(bytes: Uint8Array): OutgoingMessage[] {
  let messages: OutgoingMessage[];
  try {
    messages = decode(batchBytesCodec, bytes);
  } catch (error) {
    if (error instanceof DecodeError) throw new ApiProblem('invalid-body', `the body is not a batch of messages: ${error.message}`);
    throw error;
  }
  if (messages.length === 0) throw batchSizeProblem(0);
  messages.forEach(({ payload }, i) => {
    if (payload.length > MAX_PAYLOAD_BYTES)
      throw new ApiProblem('too-large', `messages.${i}.payload holds more than ${MAX_PAYLOAD_BYTES} bytes`, { limit_bytes: MAX_PAYLOAD_BYTES });
  });
  const errors = messages
    .flatMap(({ topic }, i) => (isAppTopic(topic) ? [] : [{ name: `messages.${i}.topic`, detail: TOPIC_RULE }]))
    .slice(0, MAX_LISTED_ERRORS);
  if (errors.length > 0) throw new ApiProblem('invalid-body', errors.map((e) => `${e.name}: ${e.detail}`).join('; '), { errors });
  return messages;
}

export const messagingRoutes: Feature<MessagingService> = (service, { json, query, readBytes, readJson, stream }) => {
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
        let to: string;
        let messages: OutgoingMessage[];
        if (isBytesType(request.headers.get('content-type'))) {
          // The recipient is in the query: the body holds nothing but the messages.
          const value = query(url, ['to']).to;
          if (value === undefined) throw badQuery('to', 'is required with a body of bytes: the receiving node id or name');
          const [fault] = validateRecipient(value);
          if (fault !== undefined) throw badQuery('to', fault.message);
          to = value;
          messages = batchFromBytes(await readBytes(request, { maxBytes: BATCH_BYTES_BODY_BYTES }));
        } else {
          // `to` in the query says the batch is bytes: the media type is what is wrong.
          if (url.searchParams.has('to'))
            throw new ApiProblem(
              'unsupported-media-type',
              `a batch with ?to= is bytes: send it as content-type: ${BYTES_TYPE} (a JSON batch names to in its body)`,
            );
          query(url);
          const value = await readJson(request, { maxBytes: BATCH_BODY_BYTES });
          const entries = (value as { messages?: unknown } | null)?.messages;
          if (Array.isArray(entries)) {
            // Said before each entry is checked: a body of a million entries is refused at once.
            if (entries.length > MAX_BATCH_MESSAGES) throw batchSizeProblem(entries.length);
            entries.forEach((message) => boundHexField(message, 'payload_hex', MAX_PAYLOAD_BYTES));
          }
          const body = checkBody(value, SendBatchBody);
          to = body.to;
          messages = body.messages.map((m) => ({ topic: m.topic, payload: fromHex(m.payload_hex) }));
        }
        try {
          return json(await service.sendMessages(recipientOf(to), messages));
        } catch (error) {
          if (!(error instanceof BatchStoppedError)) throw error;
          // The problem of the failure, telling which messages were queued.
          const problem = toProblem(error.cause);
          if (problem === undefined) throw error.cause;
          throw new ApiProblem(
            problem.code as ApiProblemCode,
            error.message,
            { ...problem.extra, queued: error.queued, seqs: error.seqs },
            { ...problem.headers },
          );
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
        const answer = stream<InboxEvent>(call, (listener) => service.followInbox(after, topic, listener), {
          allowed: INBOX_PARAMS,
          id: (event) => event.seq,
          maxQueuedBytes: STREAM_MAX_QUEUED_BYTES,
          ...(acceptsBytes(call.request.headers.get('accept')) && { format: inboxFrames }),
        });
        answer.headers.append('vary', 'Accept');
        return answer;
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
