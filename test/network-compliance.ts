/**
 * The compliance suite every implementation of the Network port must pass: the memory network on
 * every runtime (core/net/memory-network.test.ts), libp2p on loopback on Node
 * (host-node/p2p-network.node.test.ts). `open` starts fresh networks for each test.
 */
import { assert } from 'chai';
import { toHex } from '../core/encoding/hex.ts';
import { MeshError } from '../core/errors.ts';
import { type Duplex, readAll } from '../core/net/duplex.ts';
import {
  InvalidAddressError,
  InvalidNameError,
  MessageTooLargeError,
  NetworkError,
  PeerBusyError,
  PeerUnreachableError,
  ProtocolNotServedError,
  RemoteError,
  RequestTimeoutError,
  StreamResetError,
} from '../core/net/errors.ts';
import {
  appTopic,
  type GossipMessage,
  type Network,
  type PeerStream,
  type RpcLimits,
  rpcProtocolId,
  streamProtocolId,
  type Verdict,
} from '../core/net/network.ts';
import { test } from './harness.ts';

export interface NetworkFixture {
  readonly networks: readonly Network[];
  /** Drops the connection between networks `a` and `b`. */
  disconnect(a: number, b: number): Promise<void>;
  /** Stops network `a` (its connections close). */
  stop(a: number): Promise<void>;
  /** Stops every network. */
  close(): Promise<void>;
}

/**
 * Starts `count` networks under `limits`, connected pairwise as `links` says (every pair when
 * absent); it resolves once the connections are up (gossip subscriptions may still be on their way).
 */
export type OpenNetworks = (count: number, links?: readonly (readonly [number, number])[], limits?: Partial<RpcLimits>) => Promise<NetworkFixture>;

const text = new TextEncoder();
const words = new TextDecoder();
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Repeats `act` every 100 ms until `check` holds; fails after `timeoutMs`. */
export async function eventually(what: string, act: () => Promise<unknown>, check: () => boolean, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out: ${what}`);
    await act();
    await sleep(100);
  }
}

/** What `promise` rejects with; fails when it resolves. */
export async function failure(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected a failure');
}

async function networkFailure(promise: Promise<unknown>, cls: new (...args: any[]) => NetworkError, code: string, status: number): Promise<NetworkError> {
  const error = await failure(promise);
  assert.instanceOf(error, cls, String(error));
  const e = error as NetworkError;
  assert.equal(e.name, cls.name);
  assert.equal(e.code, code, e.message);
  assert.equal(e.status, status);
  return e;
}

/** Records what a node's handler on `topic` hears, and answers with `verdict`. */
function listen(net: Network, topic: string, verdict: (data: Uint8Array) => Verdict = () => 'accept'): GossipMessage[] {
  const heard: GossipMessage[] = [];
  net.handle(topic, async (m) => {
    heard.push(m);
    return verdict(m.data);
  });
  return heard;
}

const said = (heard: readonly GossipMessage[]): string[] => heard.map((m) => words.decode(m.data));

/** Writes `data` in chunks of `size`. */
export async function writeAll(stream: Duplex, data: Uint8Array, size = 64 * 1024): Promise<void> {
  for (let at = 0; at < data.length; at += size) await stream.write(data.subarray(at, at + size));
}

/** `length` bytes of a pattern no two nearby offsets share. */
export const pattern = (length: number, seed = 0): Uint8Array => Uint8Array.from({ length }, (_, i) => (i * 31 + seed + (i >> 8)) % 251);

/** The streams `net` is handed on `protocol`, as they come. */
function acceptStreams(net: Network, protocol: string): PeerStream[] {
  const accepted: PeerStream[] = [];
  net.serveStream(protocol, (stream) => void accepted.push(stream));
  return accepted;
}

const STREAM = streamProtocolId('test', 'bytes');

/** The first chunk of `stream`, leaving the rest of it to be read by another iteration. */
async function iterateOnce(stream: PeerStream): Promise<Uint8Array[]> {
  const next = await stream[Symbol.asyncIterator]().next();
  return next.done === true ? [] : [next.value];
}

export function networkCompliance(name: string, open: OpenNetworks): void {
  const withNetworks = async (
    count: number,
    links: readonly (readonly [number, number])[] | undefined,
    body: (nets: readonly Network[], fixture: NetworkFixture) => Promise<void>,
    limits?: Partial<RpcLimits>,
  ): Promise<void> => {
    const fixture = await open(count, links, limits);
    try {
      await body(fixture.networks, fixture);
    } finally {
      await fixture.close();
    }
  };

  test(`${name}: gossip reaches subscribers, signed by its publisher, never echoed to it`, async () => {
    await withNetworks(3, undefined, async ([a, b, c]) => {
      const atA = listen(a!, 'mesh-blocks');
      const atB = listen(b!, 'mesh-blocks');
      const atC = listen(c!, 'mesh-blocks');
      await eventually(
        'b and c hear a',
        () => a!.publish('mesh-blocks', text.encode('one')),
        () => atB.length > 0 && atC.length > 0,
      );
      for (const [m, other] of [
        [atB[0]!, c!],
        [atC[0]!, b!],
      ] as const) {
        assert.equal(m.topic, 'mesh-blocks');
        assert.equal(words.decode(m.data), 'one');
        assert.equal(toHex(m.origin), toHex(a!.self));
        // Handed over by a, or forwarded by the third node when its copy came first.
        assert.include([toHex(a!.self), toHex(other.self)], toHex(m.peer));
      }
      assert.deepEqual(atA, []);
    });
  });

  test(`${name}: accepted gossip is forwarded; ignored and rejected gossip is not`, async () => {
    // a — b — c in a line: c hears a only through b.
    await withNetworks(
      3,
      [
        [0, 1],
        [1, 2],
      ],
      async ([a, b, c]) => {
        listen(a!, 'mesh-blocks');
        const atB = listen(b!, 'mesh-blocks', (data) =>
          words.decode(data).startsWith('ignore') ? 'ignore' : words.decode(data).startsWith('reject') ? 'reject' : 'accept',
        );
        const atC = listen(c!, 'mesh-blocks');
        await eventually(
          'c hears a through b',
          () => a!.publish('mesh-blocks', text.encode('accept 0')),
          () => atC.length > 0,
        );
        assert.equal(toHex(atC[0]!.origin), toHex(a!.self));
        assert.equal(toHex(atC[0]!.peer), toHex(b!.self));
        await a!.publish('mesh-blocks', text.encode('ignore 1'));
        await a!.publish('mesh-blocks', text.encode('reject 2'));
        await eventually(
          'b hears both',
          async () => {},
          () => said(atB).includes('reject 2'),
        );
        await eventually(
          'c hears the next accepted one',
          () => a!.publish('mesh-blocks', text.encode('accept 3')),
          () => said(atC).includes('accept 3'),
        );
        assert.isFalse(
          said(atC).some((s) => s.startsWith('ignore') || s.startsWith('reject')),
          said(atC).join(', '),
        );
      },
    );
  });

  test(`${name}: app topics are built and checked; any topic can be joined and left`, async () => {
    assert.equal(appTopic('chat/room-1'), 'mesh-app/chat/room-1');
    for (const bad of ['', 'a b', 'x'.repeat(129), 'é', 'tab\t']) {
      const error = await networkFailure(
        Promise.resolve().then(() => appTopic(bad)),
        InvalidNameError,
        'invalid-name',
        400,
      );
      assert.instanceOf(error, MeshError);
    }
    assert.equal(rpcProtocolId('app-message'), '/mesh/rpc/1/app-message');
    await networkFailure(
      Promise.resolve().then(() => rpcProtocolId('Bad/Name')),
      InvalidNameError,
      'invalid-name',
      400,
    );

    await withNetworks(2, undefined, async ([a, b]) => {
      const chat = appTopic('chat');
      const news = appTopic('news');
      const chatAtB = listen(b!, chat);
      const newsAtB = listen(b!, news);
      await eventually(
        'b hears chat',
        () => a!.publish(chat, text.encode('hello')),
        () => chatAtB.length > 0,
      );
      await eventually(
        'b hears news',
        () => a!.publish(news, text.encode('headline')),
        () => newsAtB.length > 0,
      );
      b!.unsubscribe(chat);
      const before = chatAtB.length;
      for (let i = 0; i < 3; i++) await a!.publish(chat, text.encode(`after ${i}`));
      const newsBefore = newsAtB.length;
      await eventually(
        'b still hears news',
        () => a!.publish(news, text.encode('more')),
        () => newsAtB.length > newsBefore + 1,
      );
      assert.equal(chatAtB.length, before, 'nothing on a topic left');
    });
  });

  test(`${name}: a topic's subscribers are the connected peers subscribed to it, counted as they join and leave`, async () => {
    await withNetworks(3, undefined, async ([a, b, c]) => {
      const topic = appTopic('count-me');
      assert.equal(a!.subscribers(topic), 0);
      listen(b!, topic);
      listen(c!, topic);
      await eventually(
        'a sees two subscribers',
        async () => {},
        () => a!.subscribers(topic) === 2,
      );
      // A node's own subscription does not count: b sees only c.
      await eventually(
        'b sees c',
        async () => {},
        () => b!.subscribers(topic) === 1,
      );
      assert.equal(a!.subscribers(appTopic('nobody-here')), 0);
      c!.unsubscribe(topic);
      await eventually(
        'a sees one subscriber left',
        async () => {},
        () => a!.subscribers(topic) === 1,
      );
    });
  });

  test(`${name}: a request gets its answer; each protocol has its own handler`, async () => {
    await withNetworks(2, undefined, async ([a, b]) => {
      const askers: string[] = [];
      b!.serve('echo', async ({ peer, data }) => {
        askers.push(toHex(peer));
        return Uint8Array.from(data).reverse();
      });
      b!.serve('length', async ({ data }) => text.encode(String(data.length)));
      assert.deepEqual([...(await a!.request(b!.self, 'echo', Uint8Array.of(1, 2, 3)))], [3, 2, 1]);
      assert.equal(words.decode(await a!.request(b!.self, 'length', new Uint8Array(300_000))), '300000');
      const big = new Uint8Array(600_000).map((_, i) => i % 251);
      const back = await a!.request(b!.self, 'echo', big);
      assert.equal(back.length, big.length);
      assert.equal(back[0], big[big.length - 1]);
      assert.deepEqual(await a!.request(b!.self, 'echo', new Uint8Array(0)), new Uint8Array(0));
      assert.deepEqual(askers, [toHex(a!.self), toHex(a!.self), toHex(a!.self)]);
    });
  });

  test(`${name}: a protocol the peer does not serve, or no longer serves, fails as unsupported`, async () => {
    await withNetworks(2, undefined, async ([a, b]) => {
      await networkFailure(a!.request(b!.self, 'nobody', Uint8Array.of(1)), ProtocolNotServedError, 'unsupported-protocol', 502);
      const stop = b!.serve('once', async () => Uint8Array.of(7));
      assert.deepEqual([...(await a!.request(b!.self, 'once', Uint8Array.of(1)))], [7]);
      stop();
      let error: unknown;
      await eventually(
        'b no longer serves it',
        async () => (error = await failure(a!.request(b!.self, 'once', Uint8Array.of(1)))),
        () => error instanceof ProtocolNotServedError,
      );
      await networkFailure(Promise.reject(error), ProtocolNotServedError, 'unsupported-protocol', 502);
    });
  });

  test(`${name}: a failing handler reaches the requester as remote-failed, without its internals`, async () => {
    await withNetworks(2, undefined, async ([a, b]) => {
      b!.serve('meant', async () => {
        throw new NetworkError('remote-failed', 'no such job');
      });
      b!.serve('bug', async () => {
        throw new Error('secret internal detail');
      });
      const meant = await networkFailure(a!.request(b!.self, 'meant', Uint8Array.of(1)), RemoteError, 'remote-failed', 502);
      assert.match(meant.message, /no such job/);
      const bug = await networkFailure(a!.request(b!.self, 'bug', Uint8Array.of(1)), RemoteError, 'remote-failed', 502);
      assert.notMatch(bug.message, /secret/);
      // The connection serves on.
      b!.serve('ok', async () => Uint8Array.of(1));
      assert.deepEqual([...(await a!.request(b!.self, 'ok', Uint8Array.of(0)))], [1]);
    });
  });

  test(`${name}: a handler that refuses for load reaches the requester as busy, with its reason`, async () => {
    await withNetworks(2, undefined, async ([a, b]) => {
      b!.serve('budget', async () => {
        throw new PeerBusyError("over this peer's serve budget");
      });
      const busy = await networkFailure(a!.request(b!.self, 'budget', Uint8Array.of(1)), PeerBusyError, 'busy', 503);
      assert.match(busy.message, /serve budget/);
    });
  });

  test(`${name}: a slow answer times out, saying the peer may have processed the request; an abort ends it`, async () => {
    await withNetworks(2, undefined, async ([a, b]) => {
      const signals: AbortSignal[] = [];
      b!.serve('slow', async ({ signal }) => {
        signals.push(signal);
        await sleep(3_000);
        return Uint8Array.of(1);
      });
      const started = Date.now();
      const timeout = await networkFailure(a!.request(b!.self, 'slow', Uint8Array.of(1), { timeoutMs: 200 }), RequestTimeoutError, 'timeout', 504);
      assert.isBelow(Date.now() - started, 2_000);
      assert.match(timeout.message, /may still have processed/);
      await eventually(
        'the handler hears the requester left',
        async () => {},
        () => signals[0]?.aborted === true,
        5_000,
      );

      const controller = new AbortController();
      const reason = new Error('the user went away');
      setTimeout(() => controller.abort(reason), 100);
      assert.strictEqual(await failure(a!.request(b!.self, 'slow', Uint8Array.of(1), { signal: controller.signal })), reason);
      assert.strictEqual(await failure(a!.request(b!.self, 'slow', Uint8Array.of(1), { signal: controller.signal })), reason, 'aborted before it starts');
    });
  });

  test(`${name}: requests and answers are bounded on both sides`, async () => {
    await withNetworks(2, undefined, async ([a, b]) => {
      b!.serve('small-in', async ({ data }) => data, { maxRequestBytes: 1_000 });
      b!.serve('small-out', async ({ data }) => new Uint8Array(data[0]! * 1_000), { maxResponseBytes: 2_000 });
      b!.serve('echo', async ({ data }) => data);
      b!.serve('big', async ({ data }) => data, { maxRequestBytes: 2_000_000, maxResponseBytes: 2_000_000 });
      // The caller's bounds.
      await networkFailure(a!.request(b!.self, 'echo', new Uint8Array(101), { maxRequestBytes: 100 }), MessageTooLargeError, 'request-too-large', 413);
      await networkFailure(a!.request(b!.self, 'echo', new Uint8Array(1024 * 1024 + 1)), MessageTooLargeError, 'request-too-large', 413);
      await networkFailure(a!.request(b!.self, 'echo', new Uint8Array(5_000), { maxResponseBytes: 4_999 }), MessageTooLargeError, 'response-too-large', 502);
      // The handler's bounds.
      await networkFailure(a!.request(b!.self, 'small-in', new Uint8Array(300_000)), MessageTooLargeError, 'request-too-large', 413);
      await networkFailure(a!.request(b!.self, 'small-out', Uint8Array.of(3)), MessageTooLargeError, 'response-too-large', 502);
      // Within them, and after the refusals, requests go through.
      assert.equal((await a!.request(b!.self, 'small-in', new Uint8Array(1_000))).length, 1_000);
      assert.equal((await a!.request(b!.self, 'small-out', Uint8Array.of(2))).length, 2_000);
      assert.equal(
        (await a!.request(b!.self, 'big', new Uint8Array(2_000_000), { maxRequestBytes: 2_000_000, maxResponseBytes: 2_000_000 })).length,
        2_000_000,
      );
    });
  });

  test(`${name}: a peer that is not connected is unreachable`, async () => {
    await withNetworks(3, [[0, 1]], async ([a, , c]) => {
      c!.serve('echo', async ({ data }) => data);
      await networkFailure(a!.request(c!.self, 'echo', Uint8Array.of(1), { timeoutMs: 5_000 }), PeerUnreachableError, 'unreachable', 502);
      await networkFailure(a!.ping(c!.self, { signal: AbortSignal.timeout(5_000) }), PeerUnreachableError, 'unreachable', 502);
    });
  });

  test(`${name}: a dial hint connects a peer that was not connected; a hint naming another peer is refused`, async () => {
    await withNetworks(3, [[0, 1]], async ([a, b, c]) => {
      c!.serve('echo', async ({ data }) => data);
      const hint = c!.bootstrapAddresses()[0]!;
      await networkFailure(a!.dial(b!.self, hint), InvalidAddressError, 'invalid-address', 400);
      await networkFailure(a!.dial(c!.self, 'not a multiaddr'), InvalidAddressError, 'invalid-address', 400);
      await a!.dial(c!.self, hint);
      assert.deepEqual([...(await a!.request(c!.self, 'echo', Uint8Array.of(7)))], [7]);
    });
  });

  test(`${name}: the peer list shows connected peers with their announced heights until they disconnect`, async () => {
    await withNetworks(
      3,
      [
        [0, 1],
        [0, 2],
      ],
      async ([a, b, c], fixture) => {
        const listed = (): Record<string, number | null> => Object.fromEntries(a!.peers().map((p) => [toHex(p.node), p.height]));
        assert.deepEqual(listed(), { [toHex(b!.self)]: null, [toHex(c!.self)]: null });
        a!.reportHeight(b!.self, 7);
        a!.reportHeight(b!.self, 9);
        a!.reportHeight(new Uint8Array(32).fill(3), 99);
        assert.deepEqual(listed(), { [toHex(b!.self)]: 9, [toHex(c!.self)]: null });
        await fixture.disconnect(0, 1);
        await eventually(
          'b is gone',
          async () => {},
          () => !(toHex(b!.self) in listed()),
        );
        assert.deepEqual(listed(), { [toHex(c!.self)]: null });
      },
    );
  });

  test(`${name}: the peer list says who dialled whom, since when, and where the peer listens`, async () => {
    const before = Date.now();
    await withNetworks(2, [[0, 1]], async ([a, b]) => {
      const [ofB] = a!.peers();
      const [ofA] = b!.peers();
      assert.equal(toHex(ofB!.node), toHex(b!.self));
      assert.equal(ofB!.direction, 'outbound', 'a dialled b');
      assert.equal(ofA!.direction, 'inbound');
      for (const peer of [ofA!, ofB!]) {
        assert.isAtLeast(peer.connectedSince, before - 60_000);
        assert.isAtMost(peer.connectedSince, Date.now() + 60_000);
        assert.match(peer.remoteAddr, /^\//);
      }
      // Where b listens, as b says (identify), is one of the addresses a newcomer may join b through.
      const own = b!.bootstrapAddresses();
      await eventually(
        'a knows where b listens',
        async () => {},
        () => a!.peers()[0]!.multiaddrs.length > 0,
      );
      for (const address of a!.peers()[0]!.multiaddrs)
        assert.isTrue(
          own.some((o) => o.startsWith(address)),
          `${address} is one of ${own.join(', ')}`,
        );
    });
  });

  test(`${name}: ping measures a round trip; an aborted ping fails with the signal's reason`, async () => {
    await withNetworks(2, undefined, async ([a, b]) => {
      const rtt = await a!.ping(b!.self);
      assert.isAtLeast(rtt, 0);
      assert.isBelow(rtt, 5_000);
      const controller = new AbortController();
      controller.abort(new Error('stop'));
      assert.equal(((await failure(a!.ping(b!.self, { signal: controller.signal }))) as Error).message, 'stop');
    });
  });

  test(`${name}: a gossip handler that throws ignores the message: not forwarded, nothing unhandled`, async () => {
    await withNetworks(
      3,
      [
        [0, 1],
        [1, 2],
      ],
      async ([a, b, c]) => {
        listen(a!, 'mesh-blocks');
        b!.handle('mesh-blocks', async (m) => {
          if (words.decode(m.data).startsWith('throw')) throw new Error('handler bug');
          return 'accept';
        });
        const atC = listen(c!, 'mesh-blocks');
        await eventually(
          'c hears a through b',
          () => a!.publish('mesh-blocks', text.encode('accept 0')),
          () => atC.length > 0,
        );
        await a!.publish('mesh-blocks', text.encode('throw 1'));
        await eventually(
          'c hears the next accepted one',
          () => a!.publish('mesh-blocks', text.encode('accept 2')),
          () => said(atC).includes('accept 2'),
        );
        assert.isFalse(
          said(atC).some((s) => s.startsWith('throw')),
          said(atC).join(', '),
        );
      },
    );
  });

  test(`${name}: a bad protocol name rejects the request's promise, never throws`, async () => {
    await withNetworks(2, undefined, async ([a, b]) => {
      let pending: Promise<Uint8Array> | undefined;
      assert.doesNotThrow(() => {
        pending = a!.request(b!.self, 'Bad/Name', Uint8Array.of(1));
      });
      const caught = await pending!.catch((error: unknown) => error);
      await networkFailure(Promise.reject(caught), InvalidNameError, 'invalid-name', 400);
    });
  });

  test(`${name}: requests in flight to one peer up to the limit all succeed; past it they fail as busy`, async () => {
    const limit = 4;
    await withNetworks(
      2,
      undefined,
      async ([a, b]) => {
        let release: () => void = () => {};
        const gate = new Promise<void>((resolve) => (release = resolve));
        let arrived = 0;
        b!.serve('gate', async ({ data }) => {
          arrived++;
          await gate;
          return data;
        });
        const within = Array.from({ length: limit }, (_, i) => a!.request(b!.self, 'gate', Uint8Array.of(i)));
        await eventually(
          'every request within the limit reached the handler',
          async () => {},
          () => arrived === limit,
        );
        for (let i = 0; i < 2; i++) {
          const busy = await networkFailure(a!.request(b!.self, 'gate', Uint8Array.of(9)), PeerBusyError, 'busy', 503);
          assert.equal(busy.problem, 'peer-busy');
        }
        release();
        assert.deepEqual(
          (await Promise.all(within)).map((answer) => answer[0]),
          [0, 1, 2, 3],
        );
        // Room again once they are answered.
        assert.deepEqual([...(await a!.request(b!.self, 'gate', Uint8Array.of(5)))], [5]);
      },
      { streams: limit },
    );
  });

  test(`${name}: a handler past its deadline hears it on its signal, and the request fails`, async () => {
    await withNetworks(
      2,
      undefined,
      async ([a, b]) => {
        const signals: AbortSignal[] = [];
        b!.serve('stuck', ({ signal }) => {
          signals.push(signal);
          return new Promise(() => {});
        });
        const started = Date.now();
        await networkFailure(a!.request(b!.self, 'stuck', Uint8Array.of(1), { timeoutMs: 10_000 }), PeerUnreachableError, 'unreachable', 502);
        assert.isBelow(Date.now() - started, 5_000);
        assert.isTrue(signals[0]?.aborted);
        assert.match((signals[0]!.reason as Error).message, /deadline/);
      },
      { handlerMs: 300 },
    );
  });

  test(`${name}: a raw stream carries bytes both ways intact, and knows the peer at its other end`, async () => {
    await withNetworks(2, undefined, async ([a, b]) => {
      const peers: string[] = [];
      // b sends back what it reads, reversed byte by byte within each 1 KiB, after it has read it all.
      b!.serveStream(STREAM, (stream) => {
        peers.push(toHex(stream.peer));
        void (async () => {
          const got = await readAll(stream);
          await writeAll(
            stream,
            got.map((v) => 255 - v),
          );
          await stream.closeWrite();
        })();
      });
      const stream = await a!.openStream(b!.self, STREAM);
      assert.equal(toHex(stream.peer), toHex(b!.self));
      const sent = pattern(1024 * 1024 + 17);
      const reading = readAll(stream);
      await writeAll(stream, sent, 60_000);
      await stream.closeWrite();
      const back = await reading;
      assert.equal(back.length, sent.length);
      assert.isTrue(
        back.every((v, i) => v === 255 - sent[i]!),
        'every byte came back as sent',
      );
      await stream.closed;
      assert.deepEqual(peers, [toHex(a!.self)]);
    });
  });

  test(`${name}: a raw stream half-closes: one side's FIN ends that direction only`, async () => {
    await withNetworks(2, undefined, async ([a, b]) => {
      const accepted = acceptStreams(b!, STREAM);
      const stream = await a!.openStream(b!.self, STREAM);
      await stream.write(text.encode('question'));
      await stream.closeWrite();
      await eventually(
        'b is handed the stream',
        async () => {},
        () => accepted.length === 1,
      );
      const server = accepted[0]!;
      assert.equal(words.decode(await readAll(server)), 'question', "b reads to the end of a's writing");
      await failure(stream.write(text.encode('more')));
      // b can still answer, in several writes, long after a stopped writing.
      await sleep(50);
      for (const part of ['ans', 'wer']) await server.write(text.encode(part));
      await server.closeWrite();
      assert.equal(words.decode(await readAll(stream)), 'answer');
      await Promise.all([stream.closed, server.closed]);
    });
  });

  test(`${name}: an answer written and closed at once is read to its last byte, every time`, async () => {
    await withNetworks(2, undefined, async ([a, b]) => {
      // On libp2p the answer and its FIN can come with the protocol's acceptance, before the opener
      // holds the stream: its negotiation reads them and puts the answer back after libp2p said the
      // reading ended. The answer must still be read (a tunnel's refusal is such an answer).
      b!.serveStream(STREAM, (stream) => {
        stream
          .write(text.encode('refused: not allowed'))
          .then(() => stream.closeWrite())
          .catch(() => stream.reset());
      });
      for (let i = 0; i < 20; i++) {
        const stream = await a!.openStream(b!.self, STREAM);
        assert.equal(words.decode(await readAll(stream)), 'refused: not allowed', `stream ${i}`);
        await stream.closeWrite();
        await stream.closed;
      }
    });
  });

  test(`${name}: a reset on either side ends both directions at once`, async () => {
    await withNetworks(2, undefined, async ([a, b]) => {
      const accepted = acceptStreams(b!, STREAM);
      for (const resetter of ['opener', 'server'] as const) {
        const opener = await a!.openStream(b!.self, STREAM);
        await opener.write(text.encode('hello'));
        await eventually(
          'b is handed the stream',
          async () => {},
          () => accepted.length > 0,
        );
        const server = accepted.shift()!;
        const [first] = await iterateOnce(server);
        assert.equal(words.decode(first!), 'hello');
        const [by, other] = resetter === 'opener' ? [opener, server] : [server, opener];
        const reading = failure(readAll(other));
        by.reset(new Error('done with it'));
        for (const error of [await reading, await failure(other.closed), await failure(by.closed)]) {
          assert.instanceOf(error, StreamResetError, `${resetter}: ${String(error)}`);
          assert.equal((error as StreamResetError).code, 'stream-reset');
        }
        assert.instanceOf(await failure(other.write(text.encode('late'))), StreamResetError);
        assert.instanceOf(await failure(by.write(text.encode('late'))), StreamResetError);
      }
    });
  });

  test(`${name}: a stream is refused when the peer serves no such protocol, or no longer, or is not connected; a bad id is refused`, async () => {
    await withNetworks(3, [[0, 1]], async ([a, b, c]) => {
      await networkFailure(a!.openStream(b!.self, STREAM), ProtocolNotServedError, 'unsupported-protocol', 502);
      const stop = b!.serveStream(STREAM, (stream) => void stream.closeWrite());
      const open = await a!.openStream(b!.self, STREAM);
      assert.equal((await readAll(open)).length, 0);
      stop();
      let error: unknown;
      await eventually(
        'b no longer serves it',
        async () =>
          (error = await a!.openStream(b!.self, STREAM).then(
            (s) => s.reset(),
            (e: unknown) => e,
          )),
        () => error instanceof ProtocolNotServedError,
      );
      c!.serveStream(STREAM, () => {});
      await networkFailure(a!.openStream(c!.self, STREAM, { signal: AbortSignal.timeout(5_000) }), PeerUnreachableError, 'unreachable', 502);
      for (const bad of ['/mesh/rpc/1/echo', '/mesh/test/1/Bad', '/other/test/1/x', 'bytes']) {
        await networkFailure(a!.openStream(b!.self, bad), InvalidNameError, 'invalid-name', 400);
        assert.throws(() => b!.serveStream(bad, () => {}), InvalidNameError);
      }
      assert.throws(() => streamProtocolId('test', 'Not/A/Name'), InvalidNameError);
      assert.throws(() => streamProtocolId('rpc', 'echo'), InvalidNameError);
    });
  });

  test(`${name}: a slow reader gets every byte: the writer is held back, not the stream reset`, async () => {
    await withNetworks(2, undefined, async ([a, b]) => {
      const accepted = acceptStreams(b!, STREAM);
      const stream = await a!.openStream(b!.self, STREAM);
      const sent = pattern(4 * 1024 * 1024, 7);
      const writing = writeAll(stream, sent).then(() => stream.closeWrite());
      await eventually(
        'b is handed the stream',
        async () => {},
        () => accepted.length === 1,
      );
      const got: number[] = [];
      let total = 0;
      for await (const chunk of accepted[0]!) {
        total += chunk.length;
        got.push(chunk[0]!);
        if (got.length % 8 === 0) await sleep(20);
      }
      await writing;
      assert.equal(total, sent.length);
    });
  });

  // A broken connection resets the streams; one hung up gracefully may end their reading with the
  // FIN libp2p sends for them, but neither side's `closed` resolves and no more bytes go either way.
  const cuts = [
    { what: 'a disconnect', cut: (fixture: NetworkFixture) => fixture.disconnect(0, 1) },
    { what: 'the serving node stopping', cut: (fixture: NetworkFixture) => fixture.stop(1) },
  ];
  for (const { what, cut } of cuts) {
    test(`${name}: ${what} ends the streams between the two peers unfinished`, async () => {
      await withNetworks(2, undefined, async ([a, b], fixture) => {
        const accepted = acceptStreams(b!, STREAM);
        const stream = await a!.openStream(b!.self, STREAM);
        await stream.write(text.encode('hi'));
        await eventually(
          'b is handed the stream',
          async () => {},
          () => accepted.length === 1,
        );
        const server = accepted[0]!;
        const reads = [stream, server].map((s) =>
          readAll(s).then(
            () => 'ended',
            (error: unknown) => error,
          ),
        );
        await cut(fixture);
        for (const s of [stream, server]) {
          assert.instanceOf(await failure(s.closed), StreamResetError);
          assert.instanceOf(await failure(s.write(text.encode('late'))), StreamResetError);
        }
        for (const read of await Promise.all(reads)) if (read !== 'ended') assert.instanceOf(read, StreamResetError);
      });
    });
  }

  const midRequest = [
    {
      what: 'a disconnect',
      cut: (fixture: NetworkFixture) => fixture.disconnect(0, 1),
      heard: 'the handler hears the requester left',
      reason: /requester went away/,
    },
    {
      what: 'the serving node stopping',
      cut: (fixture: NetworkFixture) => fixture.stop(1),
      heard: 'the handler hears the node stopped',
      reason: /node stopped/,
    },
  ];
  for (const { what, cut, heard, reason } of midRequest) {
    test(`${name}: ${what} mid-request fails it as unreachable; ${heard}`, async () => {
      await withNetworks(2, undefined, async ([a, b], fixture) => {
        const signals: AbortSignal[] = [];
        b!.serve('hold', ({ signal }) => {
          signals.push(signal);
          return new Promise(() => {});
        });
        // Judged from the start: it may fail while the fixture is still cutting.
        const failed = networkFailure(a!.request(b!.self, 'hold', Uint8Array.of(1), { timeoutMs: 10_000 }), PeerUnreachableError, 'unreachable', 502);
        await eventually(
          'the handler runs',
          async () => {},
          () => signals.length > 0,
        );
        await cut(fixture);
        await failed;
        await eventually(
          heard,
          async () => {},
          () => signals[0]!.aborted,
          5_000,
        );
        assert.match((signals[0]!.reason as Error).message, reason);
      });
    });
  }
}
