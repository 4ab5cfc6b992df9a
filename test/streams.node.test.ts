/**
 * The measurement layer's streams and peers on a three-node devnet of real `mesh node` processes on
 * loopback: /blocks/stream replayed from a height and resumed with Last-Event-ID after its client
 * was killed, /transactions/stream resumed with Last-Event-ID across transfers made while its
 * client was away, the filtered signal streams, GET /peers with measured round trips (pinged every
 * 300 ms here, --ping-interval-ms), the commands that show them, and the 400s of bad filters.
 */

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { formatCredits } from '../core/encoding/amount.ts';
import type { BlockEvent } from '../core/ledger/block.ts';
import type { PeerView } from '../core/netgraph/peer-pings.ts';
import type { SignalObject } from '../core/signal/types.ts';
import { getJson, type MeshProcess, openStream, postJson, runMesh, startNode, stopAll, tcpAddress, waitFor } from './mesh-process.ts';

const ROOT = join(import.meta.dirname, '..');
const PINGS = ['--ping-interval-ms', '300'];

let a: MeshProcess;
let b: MeshProcess;
let c: MeshProcess;

before(async () => {
  a = await startNode({ mine: true, blockIntervalMs: 200, extraArgs: PINGS });
  b = await startNode({ blockIntervalMs: 200, bootstrap: [tcpAddress(a)], extraArgs: PINGS });
  c = await startNode({ blockIntervalMs: 200, bootstrap: [tcpAddress(a), tcpAddress(b)], extraArgs: PINGS });
  await waitFor('every node has both others as peers', async () => {
    for (const node of [a, b, c]) if ((await getJson<{ peers: PeerView[] }>(node, '/peers')).peers.length < 2) return false;
    return true;
  });
});

after(stopAll);

const height = async (node: MeshProcess): Promise<number> => (await getJson<{ height: number }>(node, '/beacon')).height;
const range = (from: number, to: number): number[] => Array.from({ length: to - from + 1 }, (_, i) => from + i);

/** Runs `mesh …args` on `node`'s data directory and kills it (SIGKILL) once the lines it printed (JSON) satisfy `enough`; those lines. */
async function killedAfter<T>(node: MeshProcess, args: string[], enough: (printed: readonly T[]) => boolean): Promise<T[]> {
  const child = spawn(process.execPath, [join(ROOT, 'bin/mesh.js'), ...args, '--data-dir', node.dataDir], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  const printed: T[] = [];
  let buffer = '';
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`mesh ${args.join(' ')} printed ${printed.length} lines in 30 s`)), 30_000);
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      buffer += chunk;
      const complete = buffer.split('\n');
      buffer = complete.pop()!;
      for (const line of complete) if (!enough(printed)) printed.push(JSON.parse(line) as T);
      if (enough(printed)) {
        clearTimeout(timer);
        child.kill('SIGKILL');
        resolve();
      }
    });
    child.once('exit', () => reject(new Error(`mesh ${args.join(' ')} ended on its own`)));
  });
  return printed;
}

test('/blocks/stream replays from min_height, goes on live, and a client killed halfway resumes with Last-Event-ID: no gap, no duplicate', async () => {
  await waitFor('b holds 30 blocks', async () => (await height(b)) >= 30);
  const tip = await height(b);
  // The first client: the CLI, following from height 2, killed halfway through what was held.
  const half = Math.floor((tip - 1) / 2);
  const first = await killedAfter<BlockEvent>(b, ['blocks', '--follow', '--json', '--from-height', '2'], (printed) => printed.length >= half);
  assert.deepEqual(
    first.map((block) => block.index),
    range(2, half + 1),
  );
  const last = first.at(-1)!.index;

  // Blocks go on while no client follows; the second client resumes as an EventSource does: the
  // same URL, and the id of the last event it saw.
  await waitFor('3 more blocks', async () => (await height(b)) >= tip + 3);
  const second = await openStream<BlockEvent>(b, '/blocks/stream?min_height=2', { 'last-event-id': String(last) });
  try {
    const resumedAt = await height(b);
    await second.next((block) => block.index >= resumedAt + 3, 15_000);
    const all = [...first, ...second.events];
    const heights = all.map((block) => block.index);
    assert.deepEqual(heights, range(2, heights.at(-1)!), 'every height once, in order, across the kill');
    for (let i = 1; i < all.length; i++) assert.equal(all[i]!.prev_hash, all[i - 1]!.hash, `block ${all[i]!.index} follows ${all[i - 1]!.index}`);
    assert.deepEqual(
      second.ids,
      second.events.map((block) => String(block.index)),
      "each event's id is its height",
    );
    // The same chain as the producer's.
    const producer = await openStream<BlockEvent>(a, `/blocks/stream?min_height=${heights.at(-1)}`);
    try {
      assert.equal((await producer.next(() => true)).hash, all.at(-1)!.hash);
    } finally {
      producer.close();
    }
  } finally {
    second.close();
  }
});

test('mesh blocks prints the blocks from a height up to the tip, and stops there', async () => {
  const tip = await height(b);
  const { code, out, err } = await runMesh(['blocks', '--from-height', String(tip - 4), '--data-dir', b.dataDir]);
  assert.equal(code, 0, err);
  const lines = out.trimEnd().split('\n');
  // The tip the command found when it started, at least the one read here: blocks keep coming.
  const heights = lines.map((line) => Number(line.split(/\s+/)[0]));
  assert.deepEqual(heights, range(tip - 4, heights.at(-1)!));
  assert.ok(heights.at(-1)! >= tip && heights.at(-1)! <= (await height(b)));
  assert.match(lines[0]!, /^\d+ {2}[0-9a-f]{16} {2}\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ {2}[0-9a-f]{16} {2}\d+ txs?$/);
  const usage = await runMesh(['blocks', '--from-height', '-3', '--data-dir', b.dataDir]);
  assert.equal(usage.code, 2);
});

/** An event of /transactions/stream. */
interface TxEvent {
  readonly id: string;
  readonly origin: string;
  readonly kind: string;
  readonly amount: string;
}

/** Posts `count` transfers from `from` to `to`, one at a time; their tx ids. */
async function transfers(from: MeshProcess, to: MeshProcess, count: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    const sent = await postJson(from, '/transfer', { to: to.nodeId, amount: String(i + 1) });
    assert.equal(sent.status, 201, JSON.stringify(sent.body));
    ids.push(sent.body.tx_id as string);
  }
  return ids;
}

test('/transactions/stream gives each event its position as id; a client gone between transfers resumes with Last-Event-ID: no gap, no duplicate', async () => {
  await waitFor('a holds credit to send', async () => BigInt((await getJson<{ balance: string }>(a, '/status')).balance) > 0n);
  // A client connected throughout: what the resumed one must have seen, event for event.
  const reference = await openStream<TxEvent>(b, '/transactions/stream');
  const first = await openStream<TxEvent>(b, '/transactions/stream');
  try {
    const sentBefore = await transfers(a, b, 3);
    for (const id of sentBefore) await first.next((event) => event.id === id);
    first.close();
    const last = first.ids.at(-1)!;
    // Transfers (and blocks, with their rewards) go on while the client is away.
    const sentAway = await transfers(a, b, 3);
    for (const id of sentAway) await reference.next((event) => event.id === id);
    const second = await openStream<TxEvent>(b, '/transactions/stream', { 'last-event-id': last });
    try {
      const sentAfter = await transfers(a, b, 3);
      for (const id of sentAfter) await second.next((event) => event.id === id);
      await reference.next((event) => event.id === second.events.at(-1)!.id);
      const resumed = [...first.events, ...second.events];
      const ids = [...first.ids, ...second.ids];
      const from = reference.ids.indexOf(first.ids[0]!);
      assert.ok(from >= 0);
      assert.deepEqual(ids, reference.ids.slice(from, from + ids.length), 'the same positions as the client that stayed: no gap, no duplicate at the resume');
      assert.deepEqual(resumed, reference.events.slice(from, from + resumed.length));
      assert.ok(
        ids.every((id, i) => Number.isSafeInteger(Number(id)) && (i === 0 || Number(id) > Number(ids[i - 1]))),
        `rising positions: ${ids.join(' ')}`,
      );
      const txIds = resumed.map((event) => event.id);
      for (const id of [...sentBefore, ...sentAway, ...sentAfter]) assert.equal(txIds.filter((seen) => seen === id).length, 1, `transfer ${id} once`);
      assert.equal(new Set(txIds).size, txIds.length, 'no transaction twice');
      assert.ok(
        second.types.every((type) => type === 'message'),
        'nothing was missed',
      );
      assert.ok(Number(second.ids[0]) > Number(last));

      // An id older than anything held (0 is before the node started): a `missed` event first, without an id, then all that is held.
      const behind = await openStream<TxEvent | { after: number; first_held: number }>(b, '/transactions/stream', { 'last-event-id': '0' });
      try {
        await behind.next((event) => 'id' in event && event.id === sentAfter.at(-1));
        assert.equal(behind.types[0], 'missed');
        assert.equal(behind.ids[0], '');
        const notice = behind.events[0] as { after: number; first_held: number };
        assert.equal(notice.after, 0);
        assert.equal(String(notice.first_held), behind.ids[1]);
        assert.ok(behind.types.slice(1).every((type) => type === 'message'));
        const held = behind.events.slice(1).map((event) => (event as TxEvent).id);
        assert.ok(
          [...sentBefore, ...sentAway, ...sentAfter].every((id) => held.includes(id)),
          'the ring still holds every transfer',
        );
      } finally {
        behind.close();
      }
    } finally {
      second.close();
    }
  } finally {
    first.close();
    reference.close();
  }
  for (const bad of ['-1', 'abc', '1.5']) {
    const response = await fetch(`${b.url}/transactions/stream`, { headers: { 'last-event-id': bad } });
    assert.equal(response.status, 400, bad);
    assert.equal(response.headers.get('content-type'), 'application/problem+json');
    await response.body?.cancel();
  }
});

test('/transactions/stream carries only the seven stream kinds: a ChannelOpen, pooled or mined, is not on it', async () => {
  await waitFor('a holds credit to send', async () => BigInt((await getJson<{ balance: string }>(a, '/status')).balance) > 10n ** 18n);
  const stream = await openStream<TxEvent>(b, '/transactions/stream');
  try {
    const opened = await postJson(a, '/channels/open', { host: c.nodeId, capacity: '1000' });
    assert.equal(opened.status, 201, JSON.stringify(opened.body));
    await waitFor(
      'the ChannelOpen is in a block on b',
      async () => (await getJson<{ kind: string }[]>(b, `/transactions/${a.nodeId}`)).some((row) => row.kind === 'ChannelOpen'),
      20_000,
    );
    // A transfer sent after the block reached b comes on the stream after anything that block put there.
    const [marker] = await transfers(a, b, 1);
    await stream.next((event) => event.id === marker);
    const kinds = new Set(stream.events.map((event) => event.kind));
    assert.ok(
      [...kinds].every((kind) => ['Transfer', 'UptimeReward', 'JobBid', 'JobSettle', 'JobExpire', 'TrustGrant', 'Heartbeat'].includes(kind)),
      [...kinds].join(),
    );
    assert.ok(!kinds.has('ChannelOpen'));
  } finally {
    stream.close();
  }
});

test('mesh transactions --held prints what the node holds, then goes on; --count stops it', async () => {
  await waitFor('a holds credit to send', async () => BigInt((await getJson<{ balance: string }>(a, '/status')).balance) > 0n);
  await transfers(a, b, 3);
  const held = await openStream<TxEvent>(b, '/transactions/stream', { 'last-event-id': '0' });
  try {
    await waitFor('the missed notice and 4 held events', async () => held.events.length >= 5);
    const json = await runMesh(['transactions', '--held', '--count', '4', '--json', '--data-dir', b.dataDir]);
    assert.equal(json.code, 0, json.err);
    assert.equal(json.err, '', 'the missed notice of position 0 is expected, not reported');
    assert.deepEqual(
      json.out
        .trimEnd()
        .split('\n')
        .map((line) => JSON.parse(line) as TxEvent),
      held.events.slice(1, 5),
    );
    const first = held.events[1]!;
    const human = await runMesh(['transactions', '--held', '--count', '1', '--data-dir', b.dataDir]);
    assert.equal(human.code, 0, human.err);
    assert.equal(human.out, `${first.id.slice(0, 16)}  ${first.kind}  ${first.origin.slice(0, 16)}  ${formatCredits(BigInt(first.amount))} credits\n`);
    // Live only: the next ones (each block's reward at least), then it stops at the count.
    const live = await runMesh(['transactions', '--count', '2', '--json', '--data-dir', b.dataDir]);
    assert.equal(live.code, 0, live.err);
    const printed = live.out
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line) as TxEvent);
    assert.equal(printed.length, 2);
    assert.ok(
      printed.every((tx) => !held.events.slice(0, 5).some((old) => old.id === tx.id)),
      'nothing held before it started',
    );
  } finally {
    held.close();
  }
});

/** Sends a capability-only signal from `node` (to a node id, or broadcast); resolves to its id. */
async function sendSignal(node: MeshProcess, to: string, tag: string): Promise<string> {
  const sent = await postJson(node, '/signals/send', { to, capabilities: [{ name: tag, version: 1 }] });
  assert.equal(sent.status, 202, JSON.stringify(sent.body));
  return sent.body.id as string;
}

test('the signal streams and GET /signals return only the signals that pass from and to, and resume after Last-Event-ID', async () => {
  const fromB = await openStream<SignalObject>(a, `/signals/stream?from=${b.nodeId}`);
  const toA = await openStream<SignalObject>(a, `/signals/stream?to=${a.nodeId}`);
  const fromCToA = await openStream<SignalObject>(a, `/signals/stream?from=${c.nodeId}&to=${a.nodeId}`);
  const broadcasts = await openStream<SignalObject>(a, '/signals/stream?to=broadcast');
  const everything = await openStream<SignalObject>(a, '/signals/stream');
  try {
    // Gossip needs its mesh: probes go out until a has heard one from each sender.
    for (const sender of [b, c]) {
      await waitFor(`a hears ${sender === b ? 'b' : 'c'}`, async () => {
        const probe = await sendSignal(sender, 'broadcast', 'probe');
        return waitFor('the probe', async () => everything.events.some((s) => s.id === probe), 2_000).catch(() => false);
      });
    }
    const bToA = await sendSignal(b, a.nodeId, 'b-to-a');
    const cToA = await sendSignal(c, a.nodeId, 'c-to-a');
    const bBroadcast = await sendSignal(b, 'broadcast', 'b-all');
    const cToB = await sendSignal(c, b.nodeId, 'c-to-b');
    await everything.next((s) => s.id === bBroadcast);
    await everything.next((s) => s.id === cToA);
    await toA.next((s) => s.id === bToA);
    // Between other nodes: relayed, never kept or streamed here (docs/signals.md).
    await waitFor("b keeps c's signal to it", async () =>
      (await getJson<SignalObject[]>(b, `/signals?from=${c.nodeId}&to=${b.nodeId}`)).some((s) => s.id === cToB),
    );
    assert.ok(!everything.events.some((s) => s.id === cToB));

    assert.ok(fromB.events.length > 0 && fromB.events.every((s) => s.from === b.nodeId));
    assert.ok([bToA, bBroadcast].every((id) => fromB.events.some((s) => s.id === id)));
    assert.deepEqual(toA.events.map((s) => s.id).sort(), [bToA, cToA].sort());
    assert.deepEqual(
      fromCToA.events.map((s) => s.id),
      [cToA],
    );
    assert.ok(broadcasts.events.every((s) => s.to === 'broadcast'));
    assert.ok(broadcasts.events.some((s) => s.id === bBroadcast));
    assert.deepEqual((await getJson<SignalObject[]>(a, `/signals?to=${a.nodeId}`)).map((s) => s.id).sort(), [bToA, cToA].sort());

    // Ids are positions, rising; a resume after one gives what followed it, and only that.
    const ids = everything.ids.map(Number);
    assert.ok(
      ids.every((id, i) => Number.isSafeInteger(id) && (i === 0 || id > ids[i - 1]!)),
      everything.ids.join(' '),
    );
    const at = everything.events.findIndex((s) => s.id === bToA);
    const resumed = await openStream<SignalObject>(a, '/signals/stream', { 'last-event-id': everything.ids[at]! });
    try {
      await resumed.next((s) => s.id === everything.events.at(-1)!.id);
      assert.deepEqual(
        resumed.events.map((s) => s.id),
        everything.events.slice(at + 1).map((s) => s.id),
      );
    } finally {
      resumed.close();
    }
  } finally {
    for (const stream of [fromB, toA, fromCToA, broadcasts, everything]) stream.close();
  }
});

test('/peers on a three-node devnet lists both peers of each node, who dialled, their heights and measured round trips; mesh peers shows them', async () => {
  const views = new Map<MeshProcess, PeerView[]>();
  await waitFor(
    'each node has measured both peers at least 3 times',
    async () => {
      for (const node of [a, b, c]) views.set(node, (await getJson<{ peers: PeerView[] }>(node, '/peers')).peers);
      return [...views.values()].every((peers) => peers.length === 2 && peers.every((p) => p.rtt_samples.length >= 3 && p.height !== null));
    },
    20_000,
  );
  const of = (node: MeshProcess, peer: MeshProcess): PeerView => views.get(node)!.find((p) => p.node_id === peer.nodeId)!;
  for (const [node, others] of [
    [a, [b, c]],
    [b, [a, c]],
    [c, [a, b]],
  ] as const) {
    assert.deepEqual(
      views
        .get(node)!
        .map((p) => p.node_id)
        .sort(),
      others.map((o) => o.nodeId).sort(),
    );
  }
  // b and c bootstrapped from a, c also from b: they dialled.
  assert.equal(of(a, b).direction, 'inbound');
  assert.equal(of(b, a).direction, 'outbound');
  assert.equal(of(c, b).direction, 'outbound');
  const now = Date.now() / 1000;
  for (const peers of views.values()) {
    for (const peer of peers) {
      assert.ok(peer.rtt_samples.length <= 10);
      assert.ok(
        peer.rtt_samples.every((rtt) => rtt >= 0 && rtt < 1_000),
        `loopback round trips: ${peer.rtt_samples.join(', ')}`,
      );
      const sorted = [...peer.rtt_samples].sort((x, y) => x - y);
      const mid = sorted.length >> 1;
      assert.equal(peer.rtt_ms, sorted.length % 2 ? sorted[mid] : (sorted[mid - 1]! + sorted[mid]!) / 2, 'the median of the samples');
      assert.ok(peer.connected_since <= now && peer.connected_since > now - 600);
      assert.ok(
        peer.multiaddrs.some((m) => m.startsWith('/ip4/127.0.0.1/tcp/')),
        peer.multiaddrs.join(', '),
      );
      assert.match(peer.remote_addr, /^\/ip4\/127\.0\.0\.1\/tcp\/\d+/);
    }
  }
  const table = await runMesh(['peers', '--data-dir', a.dataDir]);
  assert.equal(table.code, 0, table.err);
  const rows = table.out.trimEnd().split('\n');
  assert.match(rows[0]!, /^NODE +DIR +HEIGHT +RTT MS +SAMPLES +SINCE +ADDRESS$/);
  assert.deepEqual(
    rows
      .slice(1)
      .map((row) => row.split(/\s+/)[0])
      .sort(),
    [b.nodeId, c.nodeId].map((id) => id.slice(0, 16)).sort(),
  );
  assert.ok(
    rows.slice(1).every((row) => / in +\d+ +\d/.test(row)),
    table.out,
  );
  const json = await runMesh(['peers', '--json', '--data-dir', a.dataDir]);
  assert.equal((JSON.parse(json.out) as { peers: PeerView[] }).peers.length, 2);
});

test('mesh signals lists and follows the signals that pass --from and --to', async () => {
  const listed = await runMesh(['signals', '--from', b.nodeId, '--json', '--data-dir', a.dataDir]);
  assert.equal(listed.code, 0, listed.err);
  const signals = listed.out
    .trimEnd()
    .split('\n')
    .map((line) => JSON.parse(line) as SignalObject);
  assert.ok(signals.length > 0 && signals.every((s) => s.from === b.nodeId));
  const readable = await runMesh(['signals', '--to', a.nodeId, '--data-dir', a.dataDir]);
  assert.equal(readable.code, 0, readable.err);
  assert.ok(
    readable.out
      .trimEnd()
      .split('\n')
      .every((line) => line.includes(`→ ${a.nodeId.slice(0, 16)}`)),
    readable.out,
  );
  assert.equal((await runMesh(['signals', '--to', 'nobody', '--data-dir', a.dataDir])).code, 2);
  // Following: what is kept first, then what comes, filtered the same way.
  const kept = await getJson<SignalObject[]>(a, `/signals?from=${c.nodeId}`);
  let later = '';
  const following = killedAfter<SignalObject>(
    a,
    ['signals', '--follow', '--json', '--from', c.nodeId],
    (printed) => later !== '' && printed.some((s) => s.id === later),
  );
  later = await sendSignal(c, 'broadcast', 'later');
  const followed = await following;
  assert.ok(followed.every((s) => s.from === c.nodeId));
  assert.deepEqual(
    followed.slice(0, kept.length).map((s) => s.id),
    kept.map((s) => s.id),
    'what was kept first',
  );
});

test('bad filters and resume ids get 400, naming the parameter', async () => {
  for (const [path, headers, name] of [
    ['/blocks/stream?min_height=-1', {}, 'min_height'],
    ['/blocks/stream?min_height=abc', {}, 'min_height'],
    ['/blocks/stream?min_height=1&min_height=2', {}, 'min_height'],
    ['/blocks/stream?from=3', {}, 'from'],
    ['/blocks/stream', { 'last-event-id': 'x1' }, 'Last-Event-ID'],
    [`/signals/stream?from=${'A'.repeat(64)}`, {}, 'from'],
    ['/signals/stream?from=broadcast', {}, 'from'],
    ['/signals/stream?to=123', {}, 'to'],
    [`/signals?to=${a.nodeId}&to=broadcast`, {}, 'to'],
    ['/signals/stream', { 'last-event-id': '1.5' }, 'Last-Event-ID'],
    ['/peers?verbose=1', {}, 'verbose'],
  ] as const) {
    const response = await fetch(a.url + path, { headers });
    assert.equal(response.status, 400, path);
    const body = (await response.json()) as { errors?: { name: string }[] };
    assert.equal(body.errors?.[0]?.name, name, path);
  }
});
