// Event streams with positions and an end: the `id:` line of each frame and the final `event: end`.
// Web APIs only: runs on Node, Deno and Chromium.
import { assert } from 'chai';
import { test } from '../../test/harness.ts';
import { testScheduler } from '../time/scheduler.test-util.ts';
import { END_FRAME, eventStream, type Flow, type Unsubscribe } from './sse.ts';

interface Line {
  seq: number;
  text: string;
}

const OPTIONS = { keepAliveMs: 60_000, maxQueued: 10, id: (line: Line) => line.seq };

test('sse: each frame carries the id the stream gives its event, and end sends the end frame and closes', async () => {
  let emit: ((line: Line) => void) | undefined;
  let finish: (() => void) | undefined;
  let unsubscribed = 0;
  const body = eventStream<Line>((listener, end): Unsubscribe => {
    emit = listener;
    finish = end;
    return () => unsubscribed++;
  }, OPTIONS);
  emit!({ seq: 1, text: 'a' });
  emit!({ seq: 2, text: 'b' });
  finish!();
  // Nothing after the end, and a second end changes nothing.
  emit!({ seq: 3, text: 'c' });
  finish!();
  const text = await new Response(body).text();
  assert.equal(text, `id: 1\ndata: {"seq":1,"text":"a"}\n\nid: 2\ndata: {"seq":2,"text":"b"}\n\n${END_FRAME}`);
  assert.equal(END_FRAME, 'event: end\ndata: {}\n\n');
  assert.equal(unsubscribed, 1, 'the subscription ends with the stream');
});

test('sse: a subscriber may end the stream while subscribing (everything was already there)', async () => {
  let unsubscribed = 0;
  const body = eventStream<Line>((listener, end) => {
    listener({ seq: 7, text: 'last' });
    end();
    return () => unsubscribed++;
  }, OPTIONS);
  assert.equal(await new Response(body).text(), `id: 7\ndata: {"seq":7,"text":"last"}\n\n${END_FRAME}`);
  assert.equal(unsubscribed, 1);
});

test('sse: end after the client went away does nothing; an id that is not one line fails the stream', async () => {
  let finish: (() => void) | undefined;
  const body = eventStream<Line>((_listener, end) => {
    finish = end;
    return () => {};
  }, OPTIONS);
  await body.cancel();
  finish!();

  let emit: ((line: Line) => void) | undefined;
  const broken = eventStream<Line>(
    (listener) => {
      emit = listener;
      return () => {};
    },
    { ...OPTIONS, id: (line) => `${line.seq}\ndata: forged` },
  );
  emit!({ seq: 1, text: 'x' });
  // A reader sees the stream's own error (a Response body reader may wrap it).
  const failure = await broken
    .getReader()
    .read()
    .then(
      () => undefined,
      (error: unknown) => error,
    );
  assert.instanceOf(failure, RangeError);
});

test('sse: streams without ids frame events as before', async () => {
  const body = eventStream<Line>(
    (listener, end) => {
      listener({ seq: 1, text: 'a' });
      end();
      return () => {};
    },
    { keepAliveMs: 60_000, maxQueued: 10 },
  );
  assert.equal(await new Response(body).text(), `data: {"seq":1,"text":"a"}\n\n${END_FRAME}`);
});

test('sse: a stream bounded in bytes closes once its unread frames pass the bound, however few they are', async () => {
  let emit: ((line: Line) => void) | undefined;
  let unsubscribed = 0;
  const body = eventStream<Line>(
    (listener) => {
      emit = listener;
      return () => unsubscribed++;
    },
    { ...OPTIONS, maxQueued: 1_000, maxQueuedBytes: 2_500 },
  );
  // Frames of about a kilobyte: the third takes the queue past 2,500 bytes, the fourth finds it so and closes the stream.
  for (let seq = 1; seq <= 5; seq++) emit!({ seq, text: 'x'.repeat(1_000) });
  const text = await new Response(body).text();
  assert.equal(text.split('data: ').length - 1, 3, 'the frames queued before the bound was passed');
  assert.match(text, /: closed: more than 2500 bytes unread\n\n$/);
  assert.equal(unsubscribed, 1);
});

test('sse: a paced subscriber sends what fits, waits while the client reads nothing, and goes on as it reads', async () => {
  let flow: Flow | undefined;
  let emit: ((line: Line) => void) | undefined;
  let unsubscribed = 0;
  const body = eventStream<Line>((listener, _end, paced) => {
    emit = listener;
    flow = paced;
    return () => unsubscribed++;
  }, OPTIONS);
  assert.equal(flow!.room(), 10, 'the whole bound is free');
  for (let seq = 1; seq <= 10; seq++) emit!({ seq, text: 'x' });
  assert.equal(flow!.room(), 0, 'a burst not yet handed over counts as unread');
  let drained = false;
  const scheduler = testScheduler();
  void flow!.drained().then(() => (drained = true));
  await scheduler.settle();
  assert.isFalse(drained, 'nobody read');
  // Reading frees the room; half the bound free wakes the subscriber.
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let text = '';
  while (!drained) {
    const { value } = await reader.read();
    text += decoder.decode(value);
    await new Promise((resolve) => setTimeout(resolve, 0));
  }
  assert.isAtLeast(flow!.room(), 5);
  emit!({ seq: 11, text: 'y' });
  while (!text.includes('id: 11\n')) text += decoder.decode((await reader.read()).value);
  assert.deepEqual(
    [...text.matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1])),
    Array.from({ length: 11 }, (_, i) => i + 1),
    'nothing lost, nothing closed',
  );
  // Once the stream has ended, the flow has no room and a wait ends at once.
  await reader.cancel();
  assert.equal(flow!.room(), 0);
  await flow!.drained();
  assert.equal(unsubscribed, 1);
});
