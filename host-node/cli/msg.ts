/**
 * `mesh msg`: app messaging from the command line, over the running node's /mesh/… routes
 * (docs/cli.md, docs/messaging.md): send, request, reply, subscribe, publish, and listen, which
 * follows the inbox's stream and prints one line per message.
 *
 * Payloads are typed as text (sent as its UTF-8 bytes) unless --hex says they are hex. A payload
 * is shown as text when it is printable (UTF-8 without control characters), JSON-quoted in
 * listen's lines; otherwise as hex, `0x…` in listen's lines.
 */
import { createInterface } from 'node:readline';
import { batchBytesCodec } from '../../core/api/routes/messaging.ts';
import { encode } from '../../core/encoding/codec.ts';
import { fromHex, toHex } from '../../core/encoding/hex.ts';
import type { InboxEventJson } from '../../core/messaging/inbox.ts';
import type { OutgoingMessage, PublishAnswer, ReplyAnswer, SendAnswer, SendBatchAnswer, SubscribeAnswer } from '../../core/messaging/messaging.ts';
import { DEFAULT_REQUEST_TIMEOUT_MS, MAX_BATCH_MESSAGES, MAX_REQUEST_TIMEOUT_MS } from '../../core/messaging/messaging.ts';
import { MAX_PAYLOAD_BYTES } from '../../core/messaging/wire.ts';
import { isAppTopic } from '../../core/net/network.ts';
import { clientOptions, NodeClient } from './client.ts';
import { command, EXIT, entry, flag, type Io, option, type Parser, positional, UsageError } from './command.ts';
import { untilInterrupted } from './stop-signal.ts';
import { integer, recipient } from './values.ts';

/** A request's HTTP call waits this much longer than the request's own timeout. */
const REQUEST_MARGIN_MS = 5_000;

const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8', { fatal: true });

const topic: Parser<string> = (text, name) => {
  if (isAppTopic(text)) return text;
  throw new UsageError(`${name} must be an app topic: 1 to 128 visible ASCII characters, without spaces, got ${JSON.stringify(text)}`);
};

/** The payload argument as hex: its UTF-8 bytes, or with --hex the hex itself (lowercase, whole bytes). */
function payloadHex(text: string, hex: boolean): string {
  if (!hex) return toHex(encoder.encode(text));
  const lower = text.toLowerCase();
  if (!/^(?:[0-9a-f]{2})*$/.test(lower)) throw new UsageError(`<payload> with --hex must be hex of whole bytes, got ${JSON.stringify(text)}`);
  return lower;
}

/** The payload as text when it is UTF-8 without control characters, else null. */
export function printable(hex: string): string | null {
  try {
    const text = decoder.decode(fromHex(hex));
    return /\p{Cc}/u.test(text) ? null : text;
  } catch {
    return null;
  }
}

/** One line of `listen`: seq, kind, sender, topic, reply token (or -), and the payload. */
export function formatEvent(event: InboxEventJson): string {
  const text = printable(event.payload_hex);
  const payload = text === null ? `0x${event.payload_hex}` : JSON.stringify(text);
  return `${event.seq} ${event.kind} ${event.from} ${event.topic} ${event.reply_token ?? '-'} ${payload}\n`;
}

const hexFlag = flag('the payload is hex (00ff…), not text');
const json = flag("print the node's answer as JSON");
const toArg = positional('to', 'the receiving node: its node id (64 lowercase hex) or a name it holds', recipient);
const topicArg = positional('topic', 'the app topic: 1 to 128 visible ASCII characters, no spaces', topic);
const payloadArg = positional('payload', 'the payload: text, or hex with --hex');
const sendPayloadArg = positional('payload', 'the payload: text, or hex with --hex; - reads one message per line of standard input');

/** Payload bytes of one POST /mesh/send-batch from `send … -`: big enough to carry many lines, small enough to answer soon. */
const LINES_BATCH_BYTES = 1024 * 1024;

/**
 * `send <to> <topic> -`: every line of standard input is a message, sent in order in batches (as
 * bytes: no JSON or hex between the command and the node); prints each one's seq as its batch is queued.
 */
async function sendLines(client: NodeClient, io: Io, args: { to: string; topic: string }, options: { hex: boolean; json: boolean }): Promise<number> {
  if (io.input === undefined) throw new UsageError('<payload> - reads standard input, which this command has none of');
  let batch: OutgoingMessage[] = [];
  let bytes = 0;
  let queued = 0;
  let to = args.to;
  const flush = async (): Promise<void> => {
    if (batch.length === 0) return;
    let answer: SendBatchAnswer;
    try {
      answer = await client.postBytes<SendBatchAnswer>(`/mesh/send-batch?to=${encodeURIComponent(args.to)}`, encode(batchBytesCodec, batch));
    } catch (error) {
      io.err(`the first ${queued} lines were queued before this batch of ${batch.length}\n`);
      throw error;
    }
    queued += answer.seqs.length;
    to = answer.to;
    io.out(options.json ? `${JSON.stringify(answer)}\n` : answer.seqs.map((seq) => `${seq}\n`).join(''));
    batch = [];
    bytes = 0;
  };
  let line = 0;
  for await (const text of createInterface({ input: io.input, crlfDelay: Infinity })) {
    line++;
    let payload: string;
    try {
      payload = payloadHex(text, options.hex);
    } catch (error) {
      await flush();
      // Bad data rather than a bad command line: exit 1, without the usage.
      throw new Error(
        `line ${line}: ${(error as Error).message.replace('<payload> with --hex', 'with --hex, a line')} (the first ${queued} lines were queued)`,
      );
    }
    if (payload.length / 2 > MAX_PAYLOAD_BYTES) {
      await flush();
      throw new Error(`line ${line} is ${payload.length / 2} bytes, over a message's ${MAX_PAYLOAD_BYTES} (the first ${queued} lines were queued)`);
    }
    if (batch.length === MAX_BATCH_MESSAGES || bytes + payload.length / 2 > LINES_BATCH_BYTES) await flush();
    batch.push({ topic: args.topic, payload: fromHex(payload) });
    bytes += payload.length / 2;
  }
  await flush();
  io.err(`queued ${queued} message${queued === 1 ? '' : 's'} on ${to}\n`);
  return EXIT.done;
}

const sendCommand = command({
  description: `Sends a directed message and waits until the receiving node has queued it; prints its seq in the receiver's inbox. With - as the payload, every line of standard input is a message (text, or hex with --hex), sent in order and in batches; it prints each seq.`,
  options: { ...clientOptions, hex: hexFlag, json },
  positionals: { to: toArg, topic: topicArg, payload: sendPayloadArg },
  run: async ({ options, args }, io) => {
    const client = await NodeClient.find(options);
    if (args.payload === '-') return sendLines(client, io, args, options);
    const answer = await client.post<SendAnswer>('/mesh/send', { to: args.to, topic: args.topic, payload_hex: payloadHex(args.payload, options.hex) });
    if (options.json) io.out(`${JSON.stringify(answer)}\n`);
    else {
      io.err(`queued on ${answer.to}\n`);
      io.out(`${answer.seq}\n`);
    }
    return EXIT.done;
  },
});

const requestCommand = command({
  description: `Sends a request and waits for its reply, which it prints: as text when printable, else as hex (--hex: always hex). A timeout (exit 1) does not prove the receiver did nothing.`,
  options: {
    ...clientOptions,
    'timeout-ms': option({
      value: 'N',
      description: `how long to wait for the reply, 1 to ${MAX_REQUEST_TIMEOUT_MS}`,
      parse: integer(1, MAX_REQUEST_TIMEOUT_MS),
      default: DEFAULT_REQUEST_TIMEOUT_MS,
    }),
    hex: flag('the payload is hex, and the reply is printed as hex'),
    json,
  },
  positionals: { to: toArg, topic: topicArg, payload: payloadArg },
  run: async ({ options, args }, io) => {
    const client = await NodeClient.find(options);
    const timeoutMs = options['timeout-ms'];
    const body = { to: args.to, topic: args.topic, payload_hex: payloadHex(args.payload, options.hex), timeout_ms: timeoutMs };
    const answer = await client.post<ReplyAnswer>('/mesh/request', body, { timeoutMs: timeoutMs + REQUEST_MARGIN_MS });
    if (options.json) io.out(`${JSON.stringify(answer)}\n`);
    else {
      const text = options.hex ? null : printable(answer.payload_hex);
      io.out(`${text ?? answer.payload_hex}\n`);
    }
    return EXIT.done;
  },
});

const replyCommand = command({
  description:
    'Answers a request that reached this node, by the reply token listen showed with it. A reply after the request gave up, a second reply, or an unknown token is refused (exit 1) and never sent.',
  options: { ...clientOptions, hex: hexFlag },
  positionals: {
    token: positional('reply-token', "the request's reply token, 32 lowercase hex characters", (text, name) => {
      if (!/^[0-9a-f]{32}$/.test(text)) throw new UsageError(`${name} must be a reply token (32 lowercase hex characters), got ${JSON.stringify(text)}`);
      return text;
    }),
    payload: payloadArg,
  },
  run: async ({ options, args }, io) => {
    const client = await NodeClient.find(options);
    await client.post('/mesh/reply', { reply_token: args.token, payload_hex: payloadHex(args.payload, options.hex) });
    io.err('replied\n');
    return EXIT.done;
  },
});

const subscribeCommand = command({
  description: 'Subscribes the node to a pub/sub topic for the rest of its life; its publishes then reach listen.',
  options: { ...clientOptions, json },
  positionals: { topic: topicArg },
  run: async ({ options, args }, io) => {
    const answer = await (await NodeClient.find(options)).post<SubscribeAnswer>('/mesh/subscribe', { topic: args.topic });
    if (options.json) io.out(`${JSON.stringify(answer)}\n`);
    else
      io.err(
        `${answer.subscribed ? 'subscribed to' : 'already subscribed to'} ${answer.topic} (${answer.subscriptions} topic${answer.subscriptions === 1 ? '' : 's'})\n`,
      );
    return EXIT.done;
  },
});

const publishCommand = command({
  description: 'Publishes a signed message on a pub/sub topic; prints its id. Refused (exit 1) when no connected peer is subscribed.',
  options: { ...clientOptions, hex: hexFlag, json },
  positionals: { topic: topicArg, payload: payloadArg },
  run: async ({ options, args }, io) => {
    const client = await NodeClient.find(options);
    const answer = await client.post<PublishAnswer>('/mesh/publish', { topic: args.topic, payload_hex: payloadHex(args.payload, options.hex) });
    if (options.json) io.out(`${JSON.stringify(answer)}\n`);
    else {
      io.err(`published to ${answer.peers} peer${answer.peers === 1 ? '' : 's'}\n`);
      io.out(`${answer.id}\n`);
    }
    return EXIT.done;
  },
});

/**
 * Prints the inbox's entries as they come (after `after` first, when given), until `count` were
 * printed or `signal` aborts. A stream the node closed (a slow reader) is followed again after
 * the last seq printed.
 */
async function listen(
  client: NodeClient,
  io: Io,
  options: { topic: string | undefined; json: boolean; after: number | undefined; count: number | undefined },
  signal: AbortSignal,
): Promise<void> {
  let printed = 0;
  const path = `/mesh/messages/stream${options.topic === undefined ? '' : `?${new URLSearchParams({ topic: options.topic })}`}`;
  await client.follow(
    path,
    (frame) => {
      const event = JSON.parse(frame.data) as InboxEventJson;
      io.out(options.json ? `${JSON.stringify(event)}\n` : formatEvent(event));
      return options.count === undefined || ++printed < options.count;
    },
    { signal, ...(options.after === undefined ? {} : { lastEventId: String(options.after) }) },
  );
}

const listenCommand = command({
  description:
    'Follows the inbox: every directed message, request and publish this node takes, one line each: `<seq> <kind> <from> <topic> <reply-token or -> <payload>`, the payload JSON-quoted text when printable, else 0x and its hex. Runs until interrupted (or --count).',
  options: {
    ...clientOptions,
    topic: option({ value: 'TOPIC', description: 'only this topic', parse: topic }),
    after: option({ value: 'SEQ', description: 'first print what the inbox still holds after this seq (0: all of it)', parse: integer(0) }),
    count: option({ value: 'N', description: 'stop after N messages', parse: integer(1) }),
    json: flag('print each entry as a line of JSON, as the stream carries it'),
  },
  run: async ({ options }, io) => {
    const client = await NodeClient.find(options);
    await untilInterrupted((signal) => listen(client, io, options, signal));
    return EXIT.done;
  },
});

export const msgCommand = command({
  description: 'App messaging over the mesh: directed messages, request and reply, pub/sub, and the inbox.',
  commands: [
    entry('send', 'send a directed message: mesh msg send <to> <topic> <payload>', () => sendCommand),
    entry('request', 'send a request and print its reply', () => requestCommand),
    entry('reply', 'answer a request by its reply token', () => replyCommand),
    entry('listen', 'follow the inbox, one line per message', () => listenCommand),
    entry('subscribe', 'subscribe the node to a pub/sub topic', () => subscribeCommand),
    entry('publish', 'publish a signed message on a topic', () => publishCommand),
  ],
});
