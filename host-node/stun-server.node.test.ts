/**
 * The STUN responder on a real UDP socket: a Binding request gets the address and port it came
 * from, and a datagram that is not one gets nothing.
 */
import { createSocket } from 'node:dgram';
import { once } from 'node:events';
import { assert } from 'chai';
import { stunBindingRequest, stunMappedAddress } from '../core/net/stun.ts';
import { test } from '../test/harness.ts';
import { startStunServer } from './stun-server.ts';

test('stun server: answers a Binding request with the source address, and nothing else', async () => {
  const server = await startStunServer({ port: 0, host: '127.0.0.1' });
  const client = createSocket('udp4');
  try {
    client.bind(0, '127.0.0.1');
    await once(client, 'listening');
    const answers: Buffer[] = [];
    client.on('message', (message) => answers.push(message));
    const txid = (n: number): Uint8Array => new Uint8Array(12).fill(n);
    // Not STUN, then a STUN message of another method: neither is answered, so the first answer is the Binding's.
    client.send(Buffer.from('hello'), server.port, '127.0.0.1');
    const other = stunBindingRequest(txid(1));
    other[1] = 0x11;
    client.send(other, server.port, '127.0.0.1');
    client.send(stunBindingRequest(txid(2)), server.port, '127.0.0.1');
    const [first] = (await once(client, 'message')) as [Buffer];
    assert.deepEqual([...first.subarray(8, 20)], [...txid(2)]);
    assert.deepEqual(stunMappedAddress(new Uint8Array(first)), { address: '127.0.0.1', port: client.address().port });
    assert.equal(answers.length, 1);
  } finally {
    client.close();
    await server.close();
  }
});
