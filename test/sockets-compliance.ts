/**
 * The compliance suite of the tunnel's sockets port (core/tunnel/sockets.ts): memory sockets on
 * every runtime (core/tunnel/sockets.test.ts), node:net on Node (host-node/tunnel-sockets.node.test.ts).
 */
import { assert } from 'chai';
import { type Duplex, readAll } from '../core/net/duplex.ts';
import { StreamResetError } from '../core/net/errors.ts';
import type { SocketAddress } from '../core/tunnel/address.ts';
import { TunnelError } from '../core/tunnel/errors.ts';
import type { SocketListener, TunnelSockets } from '../core/tunnel/sockets.ts';
import { test } from './harness.ts';
import { eventually, failure, pattern, writeAll } from './network-compliance.ts';

const text = new TextEncoder();
const words = new TextDecoder();
const LOOPBACK: SocketAddress = { host: '127.0.0.1', port: 0 };
const signal = (): AbortSignal => AbortSignal.timeout(5_000);

export function socketsCompliance(name: string, sockets: TunnelSockets): void {
  /** A listener on a free loopback port, the connections it accepts, and one connection to it. */
  const pair = async (): Promise<{ listener: SocketListener; accepted: Duplex[]; client: Duplex; server: Duplex }> => {
    const accepted: Duplex[] = [];
    const listener = await sockets.listen(LOOPBACK, (connection) => void accepted.push(connection));
    assert.isAbove(listener.address.port, 0);
    const client = await sockets.connect(listener.address, { signal: signal() });
    await eventually(
      'the connection is accepted',
      async () => {},
      () => accepted.length === 1,
      5_000,
    );
    return { listener, accepted, client, server: accepted[0]! };
  };

  test(`${name}: bytes go both ways at once, each direction ends on its own`, async () => {
    const { listener, client, server } = await pair();
    try {
      const up = pattern(300_000, 1);
      const down = pattern(500_000, 2);
      const reading = readAll(server);
      const [got, back] = await Promise.all([
        reading,
        readAll(client),
        writeAll(client, up).then(() => client.closeWrite()),
        // The server keeps writing after the client's FIN has come (its reading has ended).
        (async () => {
          await writeAll(server, down.subarray(0, 1000));
          await reading;
          await writeAll(server, down.subarray(1000));
          await server.closeWrite();
        })(),
      ]);
      assert.isTrue(got.length === up.length && got.every((v, i) => v === up[i]), 'up intact');
      assert.isTrue(back.length === down.length && back.every((v, i) => v === down[i]), 'down intact');
      await Promise.all([client.closed, server.closed]);
      assert.instanceOf(await failure(client.write(text.encode('late'))), StreamResetError);
    } finally {
      await listener.close();
    }
  });

  test(`${name}: a reset on either end ends both at once`, async () => {
    for (const resetter of ['client', 'server'] as const) {
      const { listener, client, server } = await pair();
      try {
        await client.write(text.encode('hello'));
        const [by, other] = resetter === 'client' ? [client, server] : [server, client];
        const reading = failure(readAll(other));
        by.reset(new Error('gone'));
        assert.instanceOf(await reading, StreamResetError, resetter);
        assert.instanceOf(await failure(other.closed), StreamResetError, resetter);
        assert.instanceOf(await failure(by.closed), StreamResetError, resetter);
        assert.instanceOf(await failure(by.write(text.encode('x'))), StreamResetError);
      } finally {
        await listener.close();
      }
    }
  });

  test(`${name}: a taken address is refused; a closed listener takes no more, its connections go on`, async () => {
    const { listener, client, server } = await pair();
    const taken = await failure(sockets.listen(listener.address, () => {}));
    assert.instanceOf(taken, TunnelError);
    assert.equal((taken as TunnelError).code, 'bind-failed');
    await listener.close();
    assert.instanceOf(await failure(sockets.connect(listener.address, { signal: signal() })), Error);
    await client.write(text.encode('still here'));
    await client.closeWrite();
    assert.equal(words.decode(await readAll(server)), 'still here');
    server.reset();
  });

  test(`${name}: a slow reader gets every byte`, async () => {
    const { listener, client, server } = await pair();
    try {
      const sent = pattern(3 * 1024 * 1024, 3);
      const writing = writeAll(client, sent).then(() => client.closeWrite());
      let total = 0;
      let chunks = 0;
      for await (const chunk of server) {
        total += chunk.length;
        if (++chunks % 16 === 0) await new Promise((resolve) => setTimeout(resolve, 10));
      }
      await writing;
      assert.equal(total, sent.length);
      server.reset();
    } finally {
      await listener.close();
    }
  });
}
