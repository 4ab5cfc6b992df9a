/**
 * Real `mesh node` processes behind the NAT lab's routers (test/nat-lab.ts), without hole
 * punching: the public node finds itself reachable and the NATed ones not; each NATed node holds a
 * reservation on the public relay and announces its relay address; hosts behind two home NATs and
 * one behind the symmetric NAT message each other by NodeId through the relay, both ways; and a
 * relay's restart is survived (the reservations are made again). Needs root (the lab's namespaces
 * and iptables): it fails with NatLabUnavailableError otherwise.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { getJson, type MeshProcess, postJson, stopAll, stopNode, waitFor } from './mesh-process.ts';
import { createNatLab, type NatLab } from './nat-lab.ts';

let lab: NatLab;
let relay: MeshProcess;
let a: MeshProcess;
let b: MeshProcess;
let c: MeshProcess;

interface Status {
  reachability: string;
  relay_addresses: string[];
}

const status = (node: MeshProcess): Promise<Status> => getJson<Status>(node, '/status');
const hex = (text: string): string => Buffer.from(text).toString('hex');
/** The libp2p peer id a node prints in its multiaddrs. */
const peerIdOf = (node: MeshProcess): string => node.multiaddrs[0]!.split('/p2p/')[1]!;

/** Resolves once `node` announces a relay address on the relay (and says it is private). */
const reserved = (node: MeshProcess): Promise<Status> =>
  waitFor(
    'a relay address',
    async () => {
      const s = await status(node);
      return s.reachability === 'private' && s.relay_addresses.some((r) => r.includes(`/p2p/${peerIdOf(relay)}/p2p-circuit`)) && s;
    },
    30_000,
  );

/**
 * Sends `text` by NodeId until a send is answered 200, within 30 s, and finds it in the receiver's
 * inbox: a first contact can wait out a dial at addresses
 * the sender heard before the peer took its relay (docs/network.md, "Peer routing"), which is open.
 */
async function deliver(from: MeshProcess, to: MeshProcess, text: string): Promise<void> {
  await waitFor(text, async () => (await postJson(from, '/mesh/send', { to: to.nodeId, topic: 'lab', payload_hex: hex(text) })).status === 200, 30_000);
  const { messages } = await getJson<{ messages: { from: string; payload_hex: string }[] }>(to, '/mesh/messages?topic=lab');
  assert.ok(
    messages.some((m) => m.from === from.nodeId && m.payload_hex === hex(text)),
    `${text} is in the inbox`,
  );
}

before(async () => {
  lab = await createNatLab();
  relay = await lab.startNode(lab.public[0]!);
  const join = { bootstrap: [lab.tcpAddress(relay)] };
  const [first, second, third] = lab.natted;
  [a, b, c] = await Promise.all([lab.startNode(first!, join), lab.startNode(second!, join), lab.startNode(third!, join)]);
});
after(async () => {
  await stopAll();
  await lab?.close();
});

test('the public node is reachable; the NATed nodes are not and announce their relay address', async () => {
  await waitFor('the relay is public', async () => (await status(relay)).reachability === 'public', 30_000);
  for (const node of [a, b, c]) {
    const s = await reserved(node);
    assert.ok(s.relay_addresses.every((r) => r.endsWith(`/p2p-circuit/p2p/${peerIdOf(node)}`)));
  }
});

test('hosts behind two home NATs and the symmetric NAT message each other by NodeId through the relay', async () => {
  for (const node of [a, b, c]) await reserved(node);
  await deliver(a, b, 'a to b');
  await deliver(b, a, 'b to a');
  await deliver(a, c, 'a to c');
  await deliver(c, b, 'c to b');
});

test("a relay's restart is survived: the reservations are made again", async () => {
  for (const node of [a, b]) await reserved(node);
  const dataDir = relay.dataDir;
  await stopNode(relay);
  await waitFor('the relay address is withdrawn', async () => (await status(a)).relay_addresses.length === 0, 30_000);
  relay = await lab.startNode(lab.public[0]!, { dataDir });
  for (const node of [a, b]) await reserved(node);
  await deliver(a, b, 'a to b, after the restart');
  await deliver(b, a, 'b to a, after the restart');
});
