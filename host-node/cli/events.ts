/**
 * Reading a text/event-stream body for the commands that follow a node's streams. Node's fetch
 * gives the body; EventSource is not on by default in Node 24, and we need its frames, not its
 * reconnection policy. eventsource-parser does the HTML standard's "event stream interpretation".
 */
import { createParser, type ParseError } from 'eventsource-parser';

/** One dispatched event: its `id:` (the last one seen), `event:` type ('message' by default) and data. */
export interface ServerEvent {
  readonly id: string;
  readonly event: string;
  readonly data: string;
}

/**
 * Characters of one unfinished line or event a stream may hold before it is given up on, so that
 * a broken or hostile node cannot grow the buffer without end. The node's largest frame is a
 * message of 64 KiB of payload as hex, about 128 Ki characters.
 */
export const MAX_EVENT_CHARS = 1024 * 1024;

/**
 * The events of `body`, as they are dispatched, until it ends; an unfinished last frame is dropped.
 * Comments and `retry:` are skipped. Throws when an event grows past MAX_EVENT_CHARS.
 */
export async function* readEvents(body: ReadableStream<Uint8Array>): AsyncGenerator<ServerEvent> {
  const decoder = new TextDecoder();
  // The id carries over to later events, also from a frame without data (onId comes before onEvent).
  let lastId = '';
  let ready: ServerEvent[] = [];
  let overflow: ParseError | undefined;
  const parser = createParser({
    maxBufferSize: MAX_EVENT_CHARS,
    onId: (id) => {
      lastId = id;
    },
    onEvent: ({ event, data }) => {
      ready.push({ id: lastId, event: event ?? 'message', data });
    },
    onError: (error) => {
      if (error.type === 'max-buffer-size-exceeded') overflow = error;
    },
  });
  for await (const chunk of body) {
    parser.feed(decoder.decode(chunk, { stream: true }));
    const events = ready;
    ready = [];
    yield* events;
    if (overflow !== undefined) throw new Error(`the event stream sent an event of more than ${MAX_EVENT_CHARS} characters`);
  }
}
