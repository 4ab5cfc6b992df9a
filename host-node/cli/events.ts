/**
 * Reading a text/event-stream body (the HTML standard's "event stream interpretation") for the
 * commands that follow a node's streams. Node's fetch gives the body; EventSource is not on by
 * default in Node 24, and we need its frames, not its reconnection policy.
 */

/** One dispatched event: its `id:` (the last one seen), `event:` type ('message' by default) and data. */
export interface ServerEvent {
  readonly id: string;
  readonly event: string;
  readonly data: string;
}

/** The events of `body`, as they are dispatched, until it ends. Comments and `retry:` are skipped. */
export async function* readEvents(body: ReadableStream<Uint8Array>): AsyncGenerator<ServerEvent> {
  const decoder = new TextDecoder();
  let buffer = '';
  let lastId = '';
  let event = '';
  let data: string[] = [];
  for await (const chunk of body) {
    buffer += decoder.decode(chunk, { stream: true });
    // A line ends at CRLF, LF or CR; a CR at the end of the buffer may be the first half of a CRLF.
    let match: RegExpExecArray | null;
    while ((match = /\r\n|\n|\r(?=[^\n])/.exec(buffer)) !== null) {
      const line = buffer.slice(0, match.index);
      buffer = buffer.slice(match.index + match[0].length);
      if (line === '') {
        if (data.length > 0) yield { id: lastId, event: event || 'message', data: data.join('\n') };
        event = '';
        data = [];
        continue;
      }
      if (line.startsWith(':')) continue;
      const colon = line.indexOf(':');
      const field = colon < 0 ? line : line.slice(0, colon);
      const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
      if (field === 'data') data.push(value);
      else if (field === 'event') event = value;
      else if (field === 'id' && !value.includes('\0')) lastId = value;
    }
  }
}
