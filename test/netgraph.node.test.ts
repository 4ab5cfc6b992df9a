/**
 * The network graph between real `mesh node --devnet` processes on loopback (pinged every 300 ms
 * here, so a link sample every 1.8 s and a coordinate every 0.9 s): link samples signed by both
 * ends reach every node's GET /netgraph, /netgraph/rtt answers with a measurement for a peer, a
 * sample forged with one signature by an in-process libp2p peer is refused and never shown while
 * a sound one from the same peer is, the commands, and the 400s of bad input.
 */

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { SigningKey, verify } from '../core/crypto/ed25519.ts';
import { compareBytes } from '../core/encoding/bytes.ts';
import { encode } from '../core/encoding/codec.ts';
import { fromHex, toHex } from '../core/encoding/hex.ts';
import type { Libp2pNetwork } from '../core/net/libp2p-network.ts';
import { TOPICS } from '../core/net/network.ts';
import { type LinkSample, linkSigningBytes } from '../core/netgraph/link-sample.ts';
import { type NetgraphView, netgraphMessageCodec, type RttAnswer } from '../core/netgraph/netgraph.ts';
import { REGION_RTT_MS } from '../core/netgraph/stats.ts';
import { startP2PNetwork } from '../host-node/p2p.ts';
import { getJson, type MeshProcess, runMesh, startNode, stopAll, tcpAddress, waitFor } from './mesh-process.ts';

const PINGS = ['--ping-interval-ms', '300'];
/** The devnet's network name, signed into every sample. */
const DEVNET = 'mesh-devnet';

let a: MeshProcess;
let b: MeshProcess;
let c: MeshProcess;
let x: Libp2pNetwork;

before(async () => {
  a = await startNode({ mine: true, blockIntervalMs: 200, extraArgs: PINGS });
  b = await startNode({ blockIntervalMs: 200, bootstrap: [tcpAddress(a)], extraArgs: PINGS });
  c = await startNode({ blockIntervalMs: 200, bootstrap: [tcpAddress(a), tcpAddress(b)], extraArgs: PINGS });
});

after(async () => {
  await x?.stop();
  await stopAll();
});

const view = (node: MeshProcess): Promise<NetgraphView> => getJson<NetgraphView>(node, '/netgraph');
const pair = (p: MeshProcess, q: MeshProcess): [string, string] => (p.nodeId < q.nodeId ? [p.nodeId, q.nodeId] : [q.nodeId, p.nodeId]);

test("the three links get samples signed by both ends, and every node shows them all, with the others' coordinates", async () => {
  const links = [pair(a, b), pair(a, c), pair(b, c)].map(([p, q]) => `${p}:${q}`).sort();
  for (const node of [a, b, c]) {
    // Regions go by the least RTT of each link lately. On a loaded machine a round trip waits for
    // both processes to be scheduled, so the first samples can all be far above loopback's delay:
    // the view is judged once the node has held a sample of each link under REGION_RTT_MS.
    const quickest = new Map<string, number>();
    const shown = await waitFor(
      `${node.nodeId.slice(0, 8)} holds the three links, each once measured at loopback's speed`,
      async () => {
        const v = await view(node);
        for (const l of v.links) quickest.set(`${l.a}:${l.b}`, Math.min(quickest.get(`${l.a}:${l.b}`) ?? Infinity, l.rtt_ms));
        const measured = [...quickest.values()].filter((ms) => ms < REGION_RTT_MS).length === 3;
        return v.links.length === 3 && v.coordinates.length === 2 && measured ? v : false;
      },
      60_000,
    );
    assert.deepEqual(shown.links.map((l) => `${l.a}:${l.b}`).sort(), links);
    for (const link of shown.links) {
      const sample: LinkSample = {
        a: fromHex(link.a),
        b: fromHex(link.b),
        rtt_ms: link.rtt_ms,
        jitter_ms: link.jitter_ms,
        loss: link.loss,
        measured_at: link.measured_at,
      };
      const signed = linkSigningBytes(sample, DEVNET);
      assert.ok(await verify(sample.a, signed, fromHex(link.sig_a)), 'a signed it');
      assert.ok(await verify(sample.b, signed, fromHex(link.sig_b)), 'b signed it');
      assert.ok(link.rtt_ms > 0 && link.rtt_ms < 1_000, `a loopback RTT: ${link.rtt_ms}`);
      assert.ok(Math.abs(link.measured_at - Date.now()) < 60_000);
    }
    assert.deepEqual(
      shown.coordinates.map((co) => co.node_id).sort(),
      [a, b, c]
        .filter((n) => n !== node)
        .map((n) => n.nodeId)
        .sort(),
    );
    assert.equal(shown.coordinate.vec.length, 8);
    assert.ok(shown.mesh.median_rtt_ms !== null && shown.mesh.median_rtt_ms > 0);
    assert.equal(shown.mesh.reachable_frac, 1);
    assert.equal(shown.mesh.regions, 1, `loopback is one region (the samples' RTTs: ${shown.links.map((l) => l.rtt_ms).join(', ')} ms)`);
  }
});

test('GET /netgraph/rtt answers a peer with what the node measured; mesh netgraph shows it', async () => {
  const answer = await waitFor('a has measured b', async () => {
    const response = await fetch(`${a.url}/netgraph/rtt?to=${b.nodeId}`);
    return response.ok ? ((await response.json()) as RttAnswer) : false;
  });
  assert.equal(answer.source, 'measured');
  assert.equal(answer.to, b.nodeId);
  assert.ok(answer.rtt_ms > 0 && answer.rtt_ms < 1_000);
  const line = await runMesh(['netgraph', 'rtt', b.nodeId, '--data-dir', a.dataDir]);
  assert.equal(line.code, 0, line.err);
  assert.match(line.out, /^\d+(\.\d+)? ms measured \(jitter/);
  const table = await runMesh(['netgraph', '--data-dir', a.dataDir]);
  assert.equal(table.code, 0, table.err);
  assert.match(table.out, new RegExp(`node +${a.nodeId}`));
  assert.match(table.out, /A +B +RTT MS +JITTER MS +LOSS +MEASURED/);
  assert.ok(table.out.includes(`${b.nodeId.slice(0, 16)}…`), 'b among the coordinates');
  const json = await runMesh(['netgraph', '--json', '--data-dir', a.dataDir]);
  assert.equal((JSON.parse(json.out) as NetgraphView).node_id, a.nodeId);
});

test('a sample forged with one signature by a peer is refused and never shown; a sound one from it is', async () => {
  const xKey = SigningKey.generate();
  x = await startP2PNetwork({ key: xKey, port: 0, listenHost: '127.0.0.1', bootstrap: [tcpAddress(a)] });
  x.handle(TOPICS.netgraph, async () => 'ignore');
  await waitFor('a hears x on the netgraph topic', async () => x.subscribers(TOPICS.netgraph) > 0, 20_000);
  // x holds a second key, y: it can sign both ends of x–y, and only its own end of x–a.
  const y = SigningKey.generate();
  const sign = async (sample: LinkSample, key: SigningKey): Promise<Uint8Array> => key.sign(linkSigningBytes(sample, DEVNET));
  const order = (p: Uint8Array, q: Uint8Array): [Uint8Array, Uint8Array] => (compareBytes(p, q) < 0 ? [p, q] : [q, p]);
  const now = Date.now();
  const [fa, fb] = order(xKey.publicKey, fromHex(a.nodeId));
  const forged: LinkSample = { a: fa, b: fb, rtt_ms: 0.5, jitter_ms: 0.1, loss: 0, measured_at: now };
  const xSig = await sign(forged, xKey);
  // One signature: a's end carries x's signature again (a never signed it).
  await x.publish(TOPICS.netgraph, encode(netgraphMessageCodec, { kind: 'link', ...forged, sig_a: xSig, sig_b: xSig }));
  // The sound sample: x and y both sign x–y.
  const [sa, sb] = order(x.self, y.publicKey);
  const sound: LinkSample = { a: sa, b: sb, rtt_ms: 0.7, jitter_ms: 0.1, loss: 0, measured_at: now };
  const soundBytes = linkSigningBytes(sound, DEVNET);
  const bySelf = await xKey.sign(soundBytes);
  const byY = await sign(sound, y);
  const [sig_a, sig_b] = compareBytes(x.self, y.publicKey) < 0 ? [bySelf, byY] : [byY, bySelf];
  await x.publish(TOPICS.netgraph, encode(netgraphMessageCodec, { kind: 'link', ...sound, sig_a, sig_b }));
  const soundKey = `${toHex(sa)}:${toHex(sb)}`;
  for (const node of [a, b, c]) {
    const shown = await waitFor(`${node.nodeId.slice(0, 8)} shows the sound sample`, async () => {
      const v = await view(node);
      return v.links.some((l) => `${l.a}:${l.b}` === soundKey) ? v : false;
    });
    assert.ok(!shown.links.some((l) => l.a === toHex(fa) && l.b === toHex(fb)), 'the forged sample is not shown');
  }
  assert.match(a.log(), /netgraph: refused from [0-9a-f]{16}…: the signature of [ab] does not verify/);
});

test('bad input: 400 for a bad or missing node id or this node, 404 for a node it knows nothing of', async () => {
  for (const query of ['', '?to=xyz', `?to=${b.nodeId.toUpperCase()}`, `?to=${b.nodeId}00`, `?to=${a.nodeId}`, `?to=${b.nodeId}&x=1`]) {
    const response = await fetch(`${a.url}/netgraph/rtt${query}`);
    assert.equal(response.status, 400, query);
    assert.equal(response.headers.get('content-type'), 'application/problem+json');
  }
  assert.equal((await fetch(`${a.url}/netgraph?x=1`)).status, 400);
  const unknown = await fetch(`${a.url}/netgraph/rtt?to=${'5d'.repeat(32)}`);
  assert.equal(unknown.status, 404);
  assert.equal(((await unknown.json()) as { type: string }).type, '/problems/unknown-rtt');
  const cli = await runMesh(['netgraph', 'rtt', 'nope', '--data-dir', a.dataDir]);
  assert.equal(cli.code, 2);
});
