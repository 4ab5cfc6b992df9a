// The tunnel service on the memory network and memory sockets: three nodes on one machine, a
// service behind B, forwards on A (allowed) and C (not). Web APIs only: runs on every runtime.
import { assert } from 'chai';
import { test } from '../../test/harness.ts';
import { eventually, failure, pattern, writeAll } from '../../test/network-compliance.ts';
import { SigningKey } from '../crypto/ed25519.ts';
import { toHex } from '../encoding/hex.ts';
import { type Duplex, readAll } from '../net/duplex.ts';
import { InvalidNameError, StreamResetError } from '../net/errors.ts';
import { MemoryBus } from '../net/memory.test-util.ts';
import type { Network } from '../net/network.ts';
import { parseLoopbackAddress, type SocketAddress } from './address.ts';
import { TunnelError } from './errors.ts';
import { MemorySockets } from './sockets.test-util.ts';
import { type TunnelLimits, TunnelService } from './tunnels.ts';
import type { ForwardView, TunnelRequest } from './types.ts';

const SERVICE: SocketAddress = { host: '127.0.0.1', port: 8080 };
const ANY_PORT: SocketAddress = { host: '127.0.0.1', port: 0 };
const text = new TextEncoder();
const wait = (what: string, check: () => boolean): Promise<void> => eventually(what, async () => {}, check, 5_000);

interface Setup {
  readonly a: TunnelService;
  readonly b: TunnelService;
  readonly c: TunnelService;
  readonly nets: readonly Network[];
  readonly sockets: MemorySockets;
  /** Connections the service behind B accepted. */
  readonly served: Duplex[];
  readonly logs: string[];
  /** B listens on `web` for A; A and C forward to it. */
  open(): Promise<{ fromA: ForwardView; fromC: ForwardView }>;
  connect(view: ForwardView): Promise<Duplex>;
  stop(): Promise<void>;
}

async function setup(limits: Partial<TunnelLimits> = {}): Promise<Setup> {
  const bus = new MemoryBus();
  const nets = [0, 1, 2].map(() => bus.join(SigningKey.generate().publicKey));
  const sockets = new MemorySockets();
  const logs: string[] = [];
  const [a, b, c] = ['a', 'b', 'c'].map(
    (name, i) => new TunnelService({ network: nets[i]!, sockets, limits, log: (line) => logs.push(`${name}: ${line}`) }),
  ) as [TunnelService, TunnelService, TunnelService];
  const served: Duplex[] = [];
  await sockets.listen(SERVICE, (connection) => void served.push(connection));
  const forward = (from: TunnelService): Promise<ForwardView> =>
    from.open({ kind: 'forward', protocol: 'web', node: nets[1]!.self, bind: ANY_PORT }) as Promise<ForwardView>;
  return {
    a,
    b,
    c,
    nets,
    sockets,
    served,
    logs,
    async open() {
      await b.open({ kind: 'listen', protocol: 'web', target: SERVICE, allow: [nets[0]!.self] });
      return { fromA: await forward(a), fromC: await forward(c) };
    },
    connect: (view) => sockets.connect(parseLoopbackAddress(view.address, 'address'), { signal: AbortSignal.timeout(5_000) }),
    async stop() {
      await Promise.all([a, b, c].map((s) => s.stop()));
      for (const net of nets) bus.leave(net);
    },
  };
}

/** A client connected through `view` whose first byte has reached the service. */
async function carrying(s: Setup, view: ForwardView): Promise<Duplex> {
  const client = await s.connect(view);
  await client.write(text.encode('x'));
  await wait('the service takes the connection', () => s.served.length === 1);
  return client;
}

async function withSetup(body: (s: Setup) => Promise<void>, limits: Partial<TunnelLimits> = {}): Promise<void> {
  const s = await setup(limits);
  try {
    await body(s);
  } finally {
    await s.stop();
  }
}

test('tunnel: a forward reaches the service behind an allowing listener, 1 MiB each way intact, half-closed in turn', async () => {
  await withSetup(async (s) => {
    const { fromA } = await s.open();
    const client = await s.connect(fromA);
    const sent = pattern(1024 * 1024 + 3);
    // Written while the service reads: more than the buffers on the way hold.
    const writing = writeAll(client, sent).then(() => client.closeWrite());
    await wait('the service takes the connection', () => s.served.length === 1);
    const server = s.served[0]!;
    const got = await readAll(server);
    await writing;
    assert.equal(got.length, sent.length);
    assert.isTrue(
      got.every((v, i) => v === sent[i]),
      'the request arrived intact',
    );
    // The client's FIN ended one direction; the answer still goes the other way.
    const answer = pattern(1024 * 1024 + 5, 9);
    const answering = writeAll(server, answer).then(() => server.closeWrite());
    const back = await readAll(client);
    await answering;
    assert.isTrue(back.length === answer.length && back.every((v, i) => v === answer[i]), 'the answer came back intact');
    await Promise.all([client.closed, server.closed]);
    await wait('the tunnels carry nothing', () => s.a.list()[0]!.connections === 0 && s.b.list()[0]!.connections === 0);
    assert.deepEqual([s.a.list()[0]!.accepted, s.b.list()[0]!.accepted], [1, 1]);
  });
});

test('tunnel: a node the listener does not allow is refused: its client is reset and nothing reaches the service', async () => {
  await withSetup(async (s) => {
    const { fromC } = await s.open();
    const toService = (): number => s.sockets.connects.filter((a) => a === '127.0.0.1:8080').length;
    const client = await s.connect(fromC);
    await client.write(text.encode('GET / HTTP/1.1\r\n\r\n')).catch(() => {});
    assert.instanceOf(await failure(readAll(client)), StreamResetError);
    assert.instanceOf(await failure(client.closed), StreamResetError);
    assert.equal(toService(), 0, 'the listener connected to nothing');
    assert.lengthOf(s.served, 0);
    await wait('both sides count the refusal', () => s.b.list()[0]!.refused === 1 && s.c.list()[0]!.refused === 1);
    const c = toHex(s.nets[2]!.self);
    assert.isTrue(
      s.logs.some((l) => l.startsWith('b: ') && l.includes('refused') && l.includes(`${c} is not allowed on tunnel web`)),
      s.logs.join('\n'),
    );
    assert.isTrue(
      s.logs.some((l) => l.startsWith('c: ') && l.includes('refused the connection') && l.includes('is not allowed')),
      s.logs.join('\n'),
    );
    // The listener does not linger on the refused stream.
    await wait('the listener let go of it', () => s.b.list()[0]!.connections === 0);
  });
});

test('tunnel: a reset on either end resets the other', async () => {
  await withSetup(async (s) => {
    const { fromA } = await s.open();
    for (const resetter of ['client', 'service'] as const) {
      const client = await s.connect(fromA);
      await client.write(text.encode('hello'));
      await wait('the service takes the connection', () => s.served.length > 0);
      const server = s.served.shift()!;
      const [by, other] = resetter === 'client' ? [client, server] : [server, client];
      if (resetter === 'service') await server.write(text.encode('hi'));
      by.reset(new Error('gone'));
      assert.instanceOf(await failure(other.closed), StreamResetError, resetter);
      assert.instanceOf(await failure(readAll(other)), StreamResetError, resetter);
    }
    await wait('nothing carried', () => s.a.list()[0]!.connections === 0 && s.b.list()[0]!.connections === 0);
  });
});

test('tunnel: closing a forward frees its port and resets its connections; closing a listener refuses new ones', async () => {
  await withSetup(async (s) => {
    const { fromA } = await s.open();
    const client = await carrying(s, fromA);
    assert.isTrue(s.sockets.listening(fromA.address));
    assert.isTrue(await s.a.close(fromA.id));
    assert.isFalse(s.sockets.listening(fromA.address), 'the port is free');
    assert.instanceOf(await failure(client.closed), StreamResetError);
    assert.instanceOf(await failure(s.served[0]!.closed), StreamResetError);
    assert.isFalse(await s.a.close(fromA.id), 'closed once');
    assert.isUndefined(s.a.get(fromA.id));

    const again = (await s.a.open({ kind: 'forward', protocol: 'web', node: s.nets[1]!.self, bind: ANY_PORT })) as ForwardView;
    assert.isTrue(await s.b.close(s.b.list()[0]!.id));
    const refused = await s.connect(again);
    assert.instanceOf(await failure(readAll(refused)), StreamResetError);
    await wait('a says why', () => s.logs.some((l) => l.startsWith('a: ') && /does not serve \/mesh\/tunnel\/1\/web/.test(l)));
    assert.lengthOf(s.served, 1, 'no new connection reached the service');
  });
});

test('tunnel: a service that does not answer is a refusal the forwarder hears of', async () => {
  await withSetup(async (s) => {
    await s.b.open({ kind: 'listen', protocol: 'down', target: { host: '127.0.0.1', port: 9 }, allow: [s.nets[0]!.self] });
    const view = (await s.a.open({ kind: 'forward', protocol: 'down', node: s.nets[1]!.self, bind: ANY_PORT })) as ForwardView;
    const client = await s.connect(view);
    assert.instanceOf(await failure(readAll(client)), StreamResetError);
    await wait('a logs the refusal', () => s.logs.some((l) => l.startsWith('a: ') && l.includes('does not answer')));
    assert.isTrue(s.logs.some((l) => l.startsWith('b: ') && l.includes('cannot connect to 127.0.0.1:9')));
  });
});

test('tunnel: connections past the limit are refused on both sides; the others go on', async () => {
  await withSetup(
    async (s) => {
      const { fromA } = await s.open();
      const clients = [await s.connect(fromA), await s.connect(fromA)];
      for (const client of clients) await client.write(text.encode('x'));
      await wait('both reach the service', () => s.served.length === 2);
      const third = await s.connect(fromA);
      assert.instanceOf(await failure(readAll(third)), StreamResetError);
      assert.equal(s.a.list()[0]!.refused, 1);
      // A listener with a lower limit than its forwarder answers busy.
      await s.b.close(s.b.list()[0]!.id);
      const strict = new TunnelService({ network: s.nets[1]!, sockets: s.sockets, limits: { connections: 1 } });
      await strict.open({ kind: 'listen', protocol: 'web', target: SERVICE, allow: [s.nets[0]!.self] });
      const other = (await s.a.open({ kind: 'forward', protocol: 'web', node: s.nets[1]!.self, bind: ANY_PORT })) as ForwardView;
      const ok = await s.connect(other);
      await ok.write(text.encode('y'));
      await wait('it reaches the service', () => s.served.length === 3);
      const busy = await s.connect(other);
      assert.instanceOf(await failure(readAll(busy)), StreamResetError);
      await wait('a hears it was busy', () => s.logs.some((l) => l.startsWith('a: ') && l.includes('as many as it takes')));
      await strict.stop();
    },
    { connections: 2 },
  );
});

test('tunnel: what a node refuses to open: a taken protocol, too many tunnels, itself, a bound port, a bad name, an empty allow list', async () => {
  await withSetup(
    async (s) => {
      const listen = (protocol: string, allow = [s.nets[0]!.self]): TunnelRequest => ({ kind: 'listen', protocol, target: SERVICE, allow });
      const refusal = async (request: TunnelRequest, code: string, status: number): Promise<void> => {
        const error = await failure(s.a.open(request));
        assert.instanceOf(error, TunnelError, String(error));
        assert.equal((error as TunnelError).code, code);
        assert.equal((error as TunnelError).status, status);
      };
      await s.a.open(listen('one'));
      await refusal(listen('one'), 'protocol-taken', 409);
      await refusal({ kind: 'forward', protocol: 'one', node: s.nets[0]!.self, bind: ANY_PORT }, 'self', 400);
      await refusal({ kind: 'forward', protocol: 'one', node: s.nets[1]!.self, bind: SERVICE }, 'bind-failed', 409);
      await refusal(listen('two', []), 'bad-allow-list', 400);
      assert.instanceOf(await failure(s.a.open(listen('Bad/Name'))), InvalidNameError);
      await s.a.open(listen('two'));
      await refusal(listen('three'), 'too-many-tunnels', 409);
      assert.deepEqual(
        s.a.list().map((t) => t.protocol),
        ['one', 'two'],
      );
    },
    { tunnels: 2 },
  );
});

test('tunnel: stopping a node resets what its tunnels carry and frees their ports', async () => {
  await withSetup(async (s) => {
    const { fromA } = await s.open();
    const client = await carrying(s, fromA);
    await s.b.stop();
    assert.instanceOf(await failure(client.closed), StreamResetError);
    assert.instanceOf(await failure(s.served[0]!.closed), StreamResetError);
    await s.a.stop();
    assert.isFalse(s.sockets.listening(fromA.address));
    const error = await failure(s.a.open({ kind: 'forward', protocol: 'web', node: s.nets[1]!.self, bind: ANY_PORT }));
    assert.equal((error as TunnelError).code, 'unavailable');
  });
});

test('tunnel: loopback addresses only', () => {
  assert.deepEqual(parseLoopbackAddress('127.0.0.1:8080', 'target'), { host: '127.0.0.1', port: 8080 });
  assert.deepEqual(parseLoopbackAddress('[::1]:22', 'target'), { host: '::1', port: 22 });
  assert.deepEqual(parseLoopbackAddress('localhost:0', 'bind', { anyPort: true }), { host: 'localhost', port: 0 });
  assert.deepEqual(parseLoopbackAddress('127.1.2.3:65535', 'target'), { host: '127.1.2.3', port: 65535 });
  for (const bad of [
    '10.0.0.1:80',
    '0.0.0.0:80',
    '[::]:80',
    '[::2]:80',
    'example.com:80',
    '127.0.0.1',
    '127.0.0.1:0',
    '127.0.0.1:65536',
    '127.0.0.1:08',
    '127.0.0.256:80',
    '::1:80',
    ':80',
    '127.0.0.1:80:1',
  ]) {
    const error = (() => {
      try {
        return parseLoopbackAddress(bad, 'target');
      } catch (e) {
        return e;
      }
    })();
    assert.instanceOf(error, TunnelError, bad);
    assert.equal((error as TunnelError).code, 'bad-address');
  }
});
