import { assert } from 'chai';
import { rejectsAsync } from '../../test/assert.ts';
import { test } from '../../test/harness.ts';
import { key } from '../chain/testnet.test-util.ts';
import { type SigningKey, verify } from '../crypto/ed25519.ts';
import { seededRandom } from '../crypto/random.test-util.ts';
import { compareBytes } from '../encoding/bytes.ts';
import { encode } from '../encoding/codec.ts';
import { fromHex, toHex } from '../encoding/hex.ts';
import { PACE_NODES, PEER_RELAY_SHARE } from '../net/broadcast-pace.ts';
import { MemoryBus, type MemoryNetwork } from '../net/memory.test-util.ts';
import { TOPICS } from '../net/network.ts';
import { testScheduler } from '../time/scheduler.test-util.ts';
import type { Scheduler } from '../time/scheduler.ts';
import { NewestBook } from './book.ts';
import { LinkSampleError } from './errors.ts';
import { type LinkSample, linkSigningBytes, proposalCodec, signLinkSample } from './link-sample.ts';
import { COUNTERSIGN_PROTOCOL, NetGraph, type NetgraphLimits, netgraphLimitsFor, netgraphMessageCodec } from './netgraph.ts';
import { PeerPings } from './peer-pings.ts';
import { meshStats } from './stats.ts';
import { estimateRttMs } from './vivaldi.ts';

const NETWORK = 'netgraph-test';
const PING_MS = 1_000;

interface Member {
  readonly key: SigningKey;
  readonly net: MemoryNetwork;
  readonly graph: NetGraph;
  readonly pings: PeerPings;
}

/** Nodes on one memory bus with the manual clock, each pinging its peers every second and running the netgraph. */
function mesh(
  count: number,
  latencies: Record<string, number>,
  limits: Partial<NetgraphLimits> = {},
): { clock: Scheduler; bus: MemoryBus; members: Member[]; stop: () => void } {
  const clock = testScheduler(1_700_000_000_000);
  const bus = new MemoryBus(clock);
  const members = Array.from({ length: count }, (_, i) => {
    const k = key(i + 1);
    const net = bus.join(k.publicKey);
    const pings = new PeerPings({ network: net, clock, random: seededRandom(100 + i), schedule: { intervalMs: PING_MS } });
    const graph = new NetGraph({
      network: net,
      pings,
      key: k,
      networkName: NETWORK,
      clock,
      random: seededRandom(i + 1),
      limits: netgraphLimitsFor(PING_MS, limits),
    });
    return { key: k, net, graph, pings };
  });
  for (const [pair, ms] of Object.entries(latencies)) {
    const [i, j] = pair.split('').map(Number) as [number, number];
    bus.setLatency(members[i]!.key.publicKey, members[j]!.key.publicKey, ms);
  }
  for (const m of members) {
    m.graph.start();
    m.pings.start();
  }
  return {
    clock,
    bus,
    members,
    stop: () => {
      for (const m of members) {
        m.pings.stop();
        m.graph.stop();
      }
    },
  };
}

/** Four nodes: two pairs 10 ms apart, the pairs 60 to 70 ms from each other. */
const FOUR = { '01': 10, '02': 60, '03': 70, '12': 62, '13': 66, '23': 12 };

test('netgraph: coordinates converge between four nodes with set latencies, and predict each pair', async () => {
  const { clock, members, stop } = mesh(4, FOUR);
  try {
    await clock.advance(300 * PING_MS);
    for (const [pair, ms] of Object.entries(FOUR)) {
      const [i, j] = pair.split('').map(Number) as [number, number];
      const predicted = estimateRttMs(members[i]!.graph.vivaldi.coordinate, members[j]!.graph.vivaldi.coordinate);
      assert.closeTo(predicted, ms, 0.15 * ms, `pair ${pair}`);
    }
    for (const m of members) assert.isBelow(m.graph.vivaldi.coordinate.error, 0.5);
    // Node 0 holds the others' gossiped coordinates, and answers for each of them with what it measured.
    const view = members[0]!.graph.view();
    assert.sameMembers(
      view.coordinates.map((c) => c.node_id),
      members.slice(1).map((m) => toHex(m.key.publicKey)),
    );
    const rtt = members[0]!.graph.rtt(members[2]!.key.publicKey);
    assert.include(rtt, { source: 'measured', rtt_ms: 60, jitter_ms: 0, loss: 0 });
    assert.deepEqual(view.mesh, { median_rtt_ms: 61, reachable_frac: 1, regions: 2 });
  } finally {
    stop();
  }
});

test('netgraph: a node it is not connected to is predicted from its gossiped coordinate', async () => {
  const { clock, bus, members, stop } = mesh(3, { '01': 20, '02': 40, '12': 30 });
  try {
    await clock.advance(120 * PING_MS);
    // 0 and 2 lose their link: 2's coordinate still reaches 0 through 1, and 0 predicts it.
    bus.unlink(members[0]!.net, members[2]!.net);
    await clock.advance(30 * PING_MS);
    const rtt = members[0]!.graph.rtt(members[2]!.key.publicKey);
    assert.equal(rtt?.source, 'measured', 'the link sample of 0–2 is still held');
    // Past the link sample's age, only the prediction is left.
    await clock.advance(11 * 60_000);
    const predicted = members[0]!.graph.rtt(members[2]!.key.publicKey);
    assert.equal(predicted?.source, 'predicted');
    assert.closeTo(predicted!.rtt_ms, 40, 8);
    assert.isUndefined(members[0]!.graph.rtt(key(9).publicKey));
  } finally {
    stop();
  }
});

test('netgraph: each link gets one sample, signed by both ends, gossiped to every node', async () => {
  const { clock, members, stop } = mesh(3, { '01': 4, '02': 8, '12': 6 });
  try {
    await clock.until('every node holds the three links', () => members.every((m) => m.graph.view().links.length === 3), 20 * PING_MS);
    for (const m of members) {
      for (const link of m.graph.view().links) {
        assert.isBelow(compareBytes(fromHex(link.a), fromHex(link.b)), 0);
        const sample: LinkSample = {
          a: fromHex(link.a),
          b: fromHex(link.b),
          rtt_ms: link.rtt_ms,
          jitter_ms: link.jitter_ms,
          loss: link.loss,
          measured_at: link.measured_at,
        };
        const bytes = linkSigningBytes(sample, NETWORK);
        assert.isTrue(await verify(sample.a, bytes, fromHex(link.sig_a)));
        assert.isTrue(await verify(sample.b, bytes, fromHex(link.sig_b)));
        assert.oneOf(link.rtt_ms, [4, 6, 8]);
      }
    }
  } finally {
    stop();
  }
});

/** Bytes of a netgraph message carrying `sample` with the given signatures. */
function linkMessage(sample: LinkSample, sig_a: Uint8Array, sig_b: Uint8Array): Uint8Array {
  return encode(netgraphMessageCodec, { kind: 'link', ...sample, sig_a, sig_b });
}

test('netgraph: gossip refuses a sample signed by one side, a bad signature, a third signer, bad values and bad coordinates, blaming the sender', async () => {
  const { clock, bus, members, stop } = mesh(2, { '01': 5 });
  const [x, y] = [members[0]!, members[1]!];
  const mallory = key(9);
  const evil = bus.join(mallory.publicKey);
  try {
    const now = clock.now();
    const [lo, hi] = compareBytes(x.key.publicKey, y.key.publicKey) < 0 ? [x.key, y.key] : [y.key, x.key];
    const good: LinkSample = { a: lo.publicKey, b: hi.publicKey, rtt_ms: 5, jitter_ms: 0.5, loss: 0, measured_at: now };
    const sign = (s: LinkSample, k: SigningKey) => k.sign(linkSigningBytes(s, NETWORK));
    const sigA = await sign(good, lo);
    const sigB = await sign(good, hi);
    const flipped = sigB.slice();
    flipped[5]! ^= 1;
    const cases: [string, Uint8Array][] = [
      ['one signature (a twice)', linkMessage(good, sigA, sigA)],
      ['one signature (b zero)', linkMessage(good, sigA, new Uint8Array(64))],
      ['a flipped bit', linkMessage(good, sigA, flipped)],
      ['a third signer', linkMessage(good, sigA, await sign(good, mallory))],
      ['another network', linkMessage(good, sigA, await hi.sign(linkSigningBytes(good, 'other')))],
    ];
    for (const [what, bad] of [
      ['rtt 0', { rtt_ms: 0 }],
      ['rtt above 10 s', { rtt_ms: 10_001 }],
      ['loss above 1', { loss: 1.5 }],
      ['negative jitter', { jitter_ms: -1 }],
      ['a day ahead', { measured_at: now + 86_400_000 }],
      ['an hour old', { measured_at: now - 3_600_000 }],
      ['b before a', { a: hi.publicKey, b: lo.publicKey }],
    ] as const) {
      const sample = { ...good, ...bad };
      cases.push([what, linkMessage(sample, await sign(sample, lo), await sign(sample, hi))]);
    }
    const nan = linkMessage(good, sigA, sigB);
    new DataView(nan.buffer).setFloat64(1 + 64, NaN);
    cases.push(['rtt NaN', nan]);
    const coordinate = { vec: [0, 0, 0], height: 0.001, error: 1, adjustment: 0 };
    cases.push(['a 3-D coordinate', encode(netgraphMessageCodec, { kind: 'coordinate', coordinate, issued_at: now })]);
    cases.push([
      'a coordinate from tomorrow',
      encode(netgraphMessageCodec, { kind: 'coordinate', coordinate: { ...coordinate, vec: new Array(8).fill(0) }, issued_at: now + 86_400_000 }),
    ]);
    for (const [what, data] of cases) {
      const before = bus.verdicts.length;
      await evil.publish(TOPICS.netgraph, data);
      const verdicts = () => bus.verdicts.slice(before).filter((v) => v.topic === TOPICS.netgraph && v.from === toHex(mallory.publicKey));
      await clock.until(`both nodes judged: ${what}`, () => verdicts().length === 2, 0);
      assert.deepEqual(
        verdicts().map((v) => v.verdict),
        ['reject', 'reject'],
        what,
      );
    }
    assert.deepEqual(x.graph.view().links, []);
    assert.deepEqual(x.graph.view().coordinates, []);
    // The same sample with both signatures is taken, even from a third node that relays it.
    await evil.publish(TOPICS.netgraph, linkMessage(good, sigA, sigB));
    await clock.until('the good sample is taken', () => x.graph.view().links.length === 1, 0);
    assert.deepEqual(bus.verdicts.at(-1)?.verdict, 'accept');
  } finally {
    stop();
  }
});

test('netgraph: the countersigner refuses a proposal it is no party to or that it has not measured alike; a forger is penalised', async () => {
  const { clock, bus, members, stop } = mesh(1, {});
  const b = members[0]!;
  const proposer = [key(20), key(21), key(22), key(23)].find((k) => compareBytes(k.publicKey, b.key.publicKey) < 0)!;
  const evil = bus.join(proposer.publicKey);
  bus.setLatency(proposer.publicKey, b.key.publicKey, 10);
  try {
    await clock.advance(3 * PING_MS);
    const ask = async (sample: LinkSample, signer: SigningKey = proposer): Promise<string> => {
      const sig = await signer.sign(linkSigningBytes(sample, NETWORK));
      try {
        const answer = await evil.request(b.key.publicKey, COUNTERSIGN_PROTOCOL, encode(proposalCodec, { ...sample, sig }));
        return (await verify(b.key.publicKey, linkSigningBytes(sample, NETWORK), answer)) ? 'signed' : 'bad answer';
      } catch (error) {
        return (error as Error).message;
      }
    };
    const sample: LinkSample = { a: proposer.publicKey, b: b.key.publicKey, rtt_ms: 11, jitter_ms: 0, loss: 0, measured_at: clock.now() };
    assert.equal(await ask(sample), 'signed');
    assert.match(await ask({ ...sample, rtt_ms: 500 }), /far from/);
    assert.match(await ask({ ...sample, measured_at: clock.now() - 120_000 }), /30 s/);
    assert.deepEqual(evil.penalties, []);
    assert.deepEqual(b.net.penalties, [], 'an honest disagreement is not blamed');
    assert.match(await ask(sample, key(30)), /signature/);
    assert.match(await ask({ ...sample, a: key(30).publicKey }), /proposer/);
    assert.match(await ask({ ...sample, loss: 2 }), /loss/);
    assert.deepEqual(
      b.net.penalties.map((p) => p.node),
      new Array(3).fill(toHex(proposer.publicKey)),
    );
    await rejectsAsync(() => signLinkSample(sample, key(30), NETWORK), LinkSampleError, 'not-a-party');
  } finally {
    stop();
  }
});

test('netgraph: the book keeps the newest record per key, at most its capacity, dropping what expired', () => {
  const book = new NewestBook<string>(3, 1_000);
  assert.isTrue(book.put('x', 'x1', 100, 100));
  assert.isFalse(book.put('x', 'x0', 50, 100), 'an older record does not replace a newer one');
  assert.isTrue(book.put('y', 'y1', 200, 200));
  assert.isTrue(book.put('z', 'z1', 150, 200));
  assert.isTrue(book.put('w', 'w1', 300, 300));
  assert.deepEqual(
    book.list(300).map(([k]) => k),
    ['w', 'y', 'z'],
    'the oldest went past the capacity',
  );
  assert.deepEqual(
    book.list(1_250).map(([k]) => k),
    ['w'],
  );
  assert.isUndefined(book.get('y', 1_250));
  assert.isFalse(book.put('v', 'v1', 0, 1_500), 'too old to take');
  assert.equal(book.size, 0);
});

test('netgraph: mesh figures: median over the samples, the share reachable, regions by single linkage under 30 ms of the least RTT lately', () => {
  const c = (x: number) => ({ vec: [x / 1000, 0, 0, 0, 0, 0, 0, 0], height: 0.00001, error: 0.1, adjustment: 0 });
  const picture = {
    self: 'a',
    known: new Set(['a', 'b', 'c', 'd', 'e', 'f']),
    reachable: new Set(['b', 'c']),
    measured: [
      ['a', 'b', 5],
      ['b', 'c', 45],
      ['c', 'd', 100],
    ] as const,
    // b–c's newest sample, 45 ms, came in a spell of delay: it measured 25 ms lately, and that counts.
    leastMeasured: [
      ['a', 'b', 5],
      ['b', 'c', 45],
      ['c', 'd', 100],
      ['b', 'c', 25],
    ] as const,
    // d and e are 25 ms apart by their coordinates; c and d's measurement wins over theirs (20 ms).
    coordinates: new Map([
      ['c', c(0)],
      ['d', c(20)],
      ['e', c(45)],
    ]),
  };
  // Regions: {a, b, c} by measurements, {d, e} by coordinates, {f} alone.
  assert.deepEqual(meshStats(picture), { median_rtt_ms: 45, reachable_frac: 0.4, regions: 3 });
  assert.equal(meshStats({ ...picture, leastMeasured: picture.measured }).regions, 4, 'on the newest samples alone, b and c are apart');
  assert.deepEqual(meshStats({ self: 'a', known: new Set(), reachable: new Set(), measured: [], leastMeasured: [], coordinates: new Map() }), {
    median_rtt_ms: null,
    reachable_frac: null,
    regions: 1,
  });
});

test('netgraph: regions go by the least RTT lately: a spell of delay at one node does not split them, a lasting one does, its own pings join them back at once', async () => {
  // Samples and coordinates kept 2 minutes, not 10: the same run, shorter.
  const { clock, bus, members, stop } = mesh(3, { '01': 4, '02': 8, '12': 6 }, { maxAgeMs: 120_000 });
  const [n0, n1, n2] = members.map((m) => m.key.publicKey) as [Uint8Array, Uint8Array, Uint8Array];
  const regions = (): number[] => members.map((m) => m.graph.stats().regions);
  const delay = (ms01: number, ms02: number): void => {
    bus.setLatency(n0, n1, ms01);
    bus.setLatency(n0, n2, ms02);
  };
  try {
    await clock.until('every node holds the three links', () => members.every((m) => m.graph.view().links.length === 3), 20 * PING_MS);
    assert.deepEqual(regions(), [1, 1, 1]);
    // Node 0 is loaded for 40 s: every round trip to it takes 80 ms, and so say its links' samples.
    delay(80, 80);
    await clock.advance(40 * PING_MS);
    const ofNode0 = members[1]!.graph.view().links.filter((l) => l.a === toHex(n0) || l.b === toHex(n0));
    assert.deepEqual(
      ofNode0.map((l) => l.rtt_ms),
      [80, 80],
      'the delayed samples reached node 1',
    );
    assert.equal(members[2]!.graph.rtt(n0)?.rtt_ms, 80);
    assert.deepEqual(regions(), [1, 1, 1], 'what the links measured within the expiry keeps them together');
    // The delay lasts past the expiry (and the one slot more the least may be held): node 0 is somewhere else now.
    await clock.advance(150 * PING_MS);
    assert.deepEqual(regions(), [2, 2, 2]);
    // Back to 4 and 8 ms: a round of pings joins node 0 again on its own and its peers' counts, before any new sample.
    delay(4, 8);
    await clock.advance(2 * PING_MS);
    assert.deepEqual(
      members[1]!.graph
        .view()
        .links.filter((l) => l.a === toHex(n0) || l.b === toHex(n0))
        .map((l) => l.rtt_ms),
      [80, 80],
      'the samples still say 80 ms',
    );
    assert.deepEqual(regions(), [1, 1, 1]);
  } finally {
    stop();
  }
});

test('netgraph: a coordinate reaches the peers of its node every period, and past them once per paced period, within the relay budget', async () => {
  // A line, zero – one – two: two hears zero's coordinate only as one relays it. Records last a minute at the base pace.
  const { clock, bus, members, stop } = mesh(3, { '01': 10, '12': 10 }, { maxAgeMs: 60_000 });
  const [zero, one, two] = members as [Member, Member, Member];
  bus.unlink(zero.net, two.net);
  const zeroHex = toHex(zero.key.publicKey);
  // The times of zero's coordinates one and two hold, one look a second over `seconds`.
  const heard = async (seconds: number): Promise<[Set<number>, Set<number>]> => {
    const [byOne, byTwo] = [new Set<number>(), new Set<number>()];
    for (let s = 0; s < seconds; s++) {
      await clock.advance(1_000);
      const at = (m: Member) => m.graph.view().coordinates.find((c) => c.node_id === zeroHex)?.updated_at;
      const [a, b] = [at(one), at(two)];
      if (a !== undefined) byOne.add(a);
      if (b !== undefined) byTwo.add(b);
    }
    return [byOne, byTwo];
  };
  // One hears of `count` more nodes, each a coordinate relayed to it by two.
  const others = async (count: number, from: number): Promise<void> => {
    for (let n = from; n < from + count; n++) {
      const coordinate = { vec: [0.01 * (n % 7), 0, 0, 0, 0, 0, 0, 0], height: 0.001, error: 1, adjustment: 0 };
      const data = encode(netgraphMessageCodec, { kind: 'coordinate', coordinate, issued_at: clock.now() });
      const origin = new Uint8Array(32).fill(1);
      origin[0] = n & 0xff;
      origin[1] = n >> 8;
      await bus.members
        .get(toHex(one.key.publicKey))!
        .receive({ topic: TOPICS.netgraph, data, origin, peer: two.key.publicKey }, new Set([toHex(two.key.publicKey)]));
    }
  };
  const held = (m: Member) => m.graph.view().coordinates.length;
  try {
    await clock.advance(10 * PING_MS);
    // Up to PACE_NODES nodes, every 3 ping intervals, at one and at two.
    const [small1, small2] = await heard(30);
    assert.isAtLeast(small1.size, 9);
    assert.isAtLeast(small2.size, 9);
    // 10 × PACE_NODES nodes in all, heard of at once: one keeps them all, and passes on no more than its budget.
    const before = held(zero);
    await others(10 * PACE_NODES - 3, 0);
    assert.equal(held(one), 10 * PACE_NODES - 1);
    assert.equal(held(zero) - before, PEER_RELAY_SHARE, "what one peer hands over: its share of one's budget");
    // Zero's coordinate still reaches one every 3 s, and goes on to two every 30 s or so.
    await clock.advance(5_000);
    const [paced1, paced2] = await heard(60);
    assert.isAtLeast(paced1.size, 19);
    assert.includeMembers([2, 3], [paced2.size], `heard at ${[...paced2].join(', ')}`);
    // What one heard 65 s ago is still held: for three paced periods (90 s), past the base minute.
    assert.isAtLeast(held(one), 10 * PACE_NODES - 1);
    await clock.advance(30_000);
    assert.isBelow(held(one), 10 * PACE_NODES - 1, 'and not for ever');
  } finally {
    stop();
  }
});

test('netgraph: the book drops the oldest record first, of two of one time the one put first, and forgets replaced records', () => {
  const book = new NewestBook<number>(3, 10_000);
  assert.isTrue(book.put('a', 1, 100, 100));
  assert.isTrue(book.put('b', 1, 100, 100));
  assert.isTrue(book.put('c', 1, 200, 200));
  assert.isTrue(book.put('d', 1, 300, 300));
  assert.deepEqual(
    book
      .list(300)
      .map(([k]) => k)
      .sort(),
    ['b', 'c', 'd'],
    'a and b are as old; a was put first and went',
  );
  // Renewing b many times leaves one record of it; the oldest is then c.
  for (let at = 301; at < 1_000; at++) assert.isTrue(book.put('b', at, at, at));
  assert.isTrue(book.put('e', 1, 1_000, 1_000));
  assert.deepEqual(
    book.list(1_000).map(([k]) => k),
    ['e', 'b', 'd'],
  );
  assert.equal(book.get('b', 1_000)?.at, 999);
  assert.deepEqual(
    book.list(10_250).map(([k]) => k),
    ['e', 'b', 'd'],
    'nothing expired yet',
  );
  assert.deepEqual(
    book.list(10_950).map(([k]) => k),
    ['e', 'b'],
    'd expired, b renewed did not',
  );
});
