// The listener's answer as the forwarder reads it: an acceptance passes the bytes after it on; a
// refusal is complete without the listener's FIN, however it is cut into chunks.
import { assert } from 'chai';
import { test } from '../../test/harness.ts';
import { failure } from '../../test/network-compliance.ts';
import { readAll } from '../net/duplex.ts';
import { memoryStreamPair } from '../net/memory-stream.ts';
import { ANSWER, afterAnswer, MAX_REASON_BYTES, refusalFrame, TunnelRefusedError } from './wire.ts';

const NODE = new Uint8Array(32);
const text = new TextEncoder();
const words = new TextDecoder();

test("tunnel wire: after an acceptance the forwarder reads the service's bytes, the answer byte taken off", async () => {
  const { opener, server } = memoryStreamPair(NODE, NODE);
  let accepted = 0;
  const reading = readAll(afterAnswer(opener, () => accepted++));
  await server.write(Uint8Array.of(ANSWER.accepted, ...text.encode('HTTP/1.1 200')));
  await server.write(text.encode(' OK'));
  await server.closeWrite();
  assert.equal(words.decode(await reading), 'HTTP/1.1 200 OK');
  assert.equal(accepted, 1);
});

test("tunnel wire: a refusal is read whole without the listener's FIN, cut anywhere", async () => {
  const reason = `${'ab'.repeat(32)} is not allowed on tunnel web`;
  const frame = refusalFrame(ANSWER.notAllowed, reason);
  for (const cuts of [[frame.length], [1, frame.length], [2, 7, frame.length], [1, 2, 3, frame.length]]) {
    const { opener, server } = memoryStreamPair(NODE, NODE);
    let accepted = 0;
    const reading = failure(readAll(afterAnswer(opener, () => accepted++)));
    let at = 0;
    for (const cut of cuts) {
      await server.write(frame.subarray(at, cut));
      at = cut;
    }
    const error = (await reading) as TunnelRefusedError;
    assert.instanceOf(error, TunnelRefusedError);
    assert.equal(error.status, ANSWER.notAllowed);
    assert.equal(error.message, reason, cuts.join(','));
    assert.equal(accepted, 0);
    opener.reset();
  }
  assert.equal(refusalFrame(ANSWER.busy, 'x'.repeat(1000)).length, 2 + MAX_REASON_BYTES);
});

test('tunnel wire: a listener that closes without answering is a refusal', async () => {
  const { opener, server } = memoryStreamPair(NODE, NODE);
  const reading = failure(readAll(afterAnswer(opener)));
  await server.closeWrite();
  assert.instanceOf(await reading, TunnelRefusedError);
});
