/**
 * The dial-back check (core/net/reachability.ts) between real libp2p nodes on loopback: nodes that
 * can connect to each other find themselves public; a request naming a port nobody listens on is
 * answered "could not", and a second request within the minute is refused. The NAT lab
 * (test/nat-relay.node.test.ts) shows the private verdict behind a real NAT.
 */
import { noise } from '@chainsafe/libp2p-noise';
import { yamux } from '@chainsafe/libp2p-yamux';
import type { Libp2p } from '@libp2p/interface';
import { tcp } from '@libp2p/tcp';
import { lpStream } from '@libp2p/utils';
import { assert } from 'chai';
import { createLibp2p } from 'libp2p';
import { SigningKey } from '../core/crypto/ed25519.ts';
import type { Libp2pNetwork } from '../core/net/libp2p-network.ts';
import { DIAL_BACK_PROTOCOL } from '../core/net/reachability.ts';
import { test } from '../test/harness.ts';
import { startP2PNetwork } from './p2p.ts';

const start = (bootstrap: string[] = []): Promise<Libp2pNetwork> =>
  startP2PNetwork({ key: SigningKey.generate(), port: 0, listenHost: '127.0.0.1', bootstrap });

async function until(what: string, check: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** One dial-back request for `port` from `client` to `server`: the answer's status byte. */
async function askDialBack(client: Libp2p, server: Libp2pNetwork, port: number): Promise<number | undefined> {
  const stream = await client.dialProtocol(server.libp2p.getMultiaddrs()[0]!, DIAL_BACK_PROTOCOL);
  const lp = lpStream(stream);
  await lp.write(Uint8Array.of(port >> 8, port & 0xff));
  const answer = (await lp.read()).subarray();
  await stream.close().catch(() => {});
  return answer[0];
}

test('reachability: nodes that can connect to each other find themselves public', async () => {
  const a = await start();
  const b = await start([a.addresses()[0]!]);
  try {
    assert.equal(a.reachability().reachability, 'unknown');
    await until('both public', () => a.reachability().reachability === 'public' && b.reachability().reachability === 'public');
    assert.deepEqual(b.reachability().relayAddresses, []);
  } finally {
    await Promise.all([a.stop(), b.stop()]);
  }
});

test('reachability: a port nobody listens on is answered "could not"; a second request within the minute is refused', async () => {
  const server = await start();
  // A bare libp2p node: no dial-back service of its own asks first and spends its request.
  const client = await createLibp2p({
    transports: [tcp()],
    connectionEncrypters: [noise()],
    streamMuxers: [yamux()],
    connectionGater: { denyDialMultiaddr: () => false },
  });
  try {
    // Port 1 on loopback: nothing listens there.
    assert.equal(await askDialBack(client, server, 1), 1);
    assert.equal(await askDialBack(client, server, 1), 2);
  } finally {
    await Promise.all([server.stop(), client.stop()]);
  }
});
