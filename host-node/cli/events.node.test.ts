/** Reading event streams: fields, comments, line ends of every kind, and frames split anywhere. */

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MAX_EVENT_CHARS, readEvents, type ServerEvent } from './events.ts';

function body(chunks: readonly string[]): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  return new ReadableStream({
    start(controller): void {
      for (const chunk of chunks) controller.enqueue(encoder.encode(chunk));
      controller.close();
    },
  });
}

async function events(chunks: readonly string[]): Promise<ServerEvent[]> {
  const seen: ServerEvent[] = [];
  for await (const event of readEvents(body(chunks))) seen.push(event);
  return seen;
}

const STREAM = ': keep-alive\n\nid: 1\ndata: {"a":1}\n\nid: 2\r\ndata:two\r\ndata:  lines\r\n\r\nretry: 5\nevent: end\ndata: {}\r\rdata: no end';

test('events: ids carry over, data lines join, comments and retry are skipped, an unfinished frame is dropped', async () => {
  const expected: ServerEvent[] = [
    { id: '1', event: 'message', data: '{"a":1}' },
    { id: '2', event: 'message', data: 'two\n lines' },
    { id: '2', event: 'end', data: '{}' },
  ];
  assert.deepEqual(await events([STREAM]), expected);
  // The same bytes split at every position, CRLF pairs included.
  for (let at = 1; at < STREAM.length; at++) assert.deepEqual(await events([STREAM.slice(0, at), STREAM.slice(at)]), expected, `split at ${at}`);
  assert.deepEqual(await events([...STREAM]), expected);
});

test('events: a frame without data dispatches nothing; an id with NUL is ignored', async () => {
  assert.deepEqual(await events(['id: 5\n\nevent: x\n\nid: 6\0\ndata: d\n\n']), [{ id: '5', event: 'message', data: 'd' }]);
});

test('events: a line or event that outgrows the bound ends the stream with an error; a long comment is skipped', async () => {
  const half = 'x'.repeat(MAX_EVENT_CHARS / 2);
  // An event that fits, split into many chunks, then one whose data lines together do not.
  await assert.rejects(events(['data: 1\n\n', `data: ${half}`, `${half}`, 'x\n\n']), /more than 1048576 characters/);
  await assert.rejects(events([`data: ${half}\n`, `data: ${half}\n`, 'data: x\n\n']), /more than 1048576 characters/);
  const seen: ServerEvent[] = [];
  await assert.rejects(async () => {
    for await (const event of readEvents(body(['id: 7\ndata: 1\n\ndata: ', half, half, 'x']))) seen.push(event);
  });
  assert.deepEqual(seen, [{ id: '7', event: 'message', data: '1' }], 'the events before the long one still come');
  assert.deepEqual(await events([': ', half, half, half, '\n\ndata: after\n\n']), [{ id: '', event: 'message', data: 'after' }]);
});
