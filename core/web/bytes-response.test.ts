import { assert } from 'chai';
import { test } from '../../test/harness.ts';
import { bytesResponse, heldBytes, holdBodies } from './bytes-response.ts';

const encoder = new TextEncoder();
const init = { status: 201, statusText: 'Made', headers: { 'content-type': 'application/json', etag: '"a"' } };

/** Everything a reader can see of a response, read through `read`. */
async function seen(response: Response, read: (r: Response) => Promise<unknown>): Promise<unknown> {
  return { status: response.status, statusText: response.statusText, headers: [...response.headers], ok: response.ok, body: await read(response) };
}

const READERS: Record<string, (r: Response) => Promise<unknown>> = {
  text: (r) => r.text(),
  json: (r) => r.json(),
  arrayBuffer: async (r) => [...new Uint8Array(await r.arrayBuffer())],
  bytes: async (r) => [...(await r.bytes())],
  blob: async (r) => (await r.blob()).text(),
  stream: async (r) => new Response(r.body).text(),
};

test('bytesResponse: a held response reads exactly as a plain one, by every reader', async () => {
  const plain = (): Response => new Response(encoder.encode('{"a":[1,"é"]}'), init);
  holdBodies();
  for (const [name, read] of Object.entries(READERS)) {
    const held = bytesResponse('{"a":[1,"é"]}', init);
    const twin = plain();
    assert.instanceOf(held, Response);
    assert.isFalse(held.bodyUsed, name);
    assert.deepEqual(await seen(held, read), await seen(twin, read), name);
    assert.equal(held.bodyUsed, twin.bodyUsed, `${name}: used as a plain response is`);
    assert.isUndefined(heldBytes(held), `${name}: a body someone read is no longer handed out as bytes`);
  }
});

test('bytesResponse: a held body is handed to the host untouched and unread, and copied from the caller', async () => {
  holdBodies();
  const source = encoder.encode('{"n":1}');
  const response = bytesResponse(source, init);
  source.fill(0x20);
  assert.deepEqual([...heldBytes(response)!], [...encoder.encode('{"n":1}')], 'the bytes as they were when the response was made');
  assert.isFalse(response.bodyUsed);
  assert.deepEqual(await response.json(), { n: 1 }, 'still readable after the host looked');
});

test('bytesResponse: clone gives a second reader, a used body cannot be read twice, a null-body status is refused', async () => {
  holdBodies();
  const response = bytesResponse('x', init);
  const copy = response.clone();
  assert.equal(await copy.text(), 'x');
  assert.equal(await response.text(), 'x');
  let error: unknown;
  await response.text().catch((e: unknown) => (error = e));
  assert.instanceOf(error, TypeError, 'a body is read once');
  assert.throws(() => response.clone(), TypeError);
  for (const status of [204, 304]) assert.throws(() => bytesResponse('x', { status }), TypeError, `status ${status}`);
  assert.equal(heldBytes(new Response('plain')), undefined, 'a plain response holds nothing');
  const late = bytesResponse('y', init);
  assert.isNotNull(late.body, 'the twin is made');
  late.headers.set('x-late', '1');
  const lateCopy = late.clone();
  assert.equal(lateCopy.headers.get('x-late'), '1', 'a clone has the headers as they are now');
  assert.equal(await lateCopy.text(), 'y');
});
