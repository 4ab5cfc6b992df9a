/**
 * Hole punching in the NAT lab (test/nat-lab.ts), with real `mesh node` processes: the public node
 * is the relay and the STUN server; A and B sit behind cone NATs, C behind a symmetric one. Each
 * joins through the relay, finds itself private and keeps a reservation there. B and C meet A
 * through the relay (a bootstrap address `…/p2p-circuit/p2p/<A>`); A and B end up on a direct
 * WebRTC connection, A and C stay relayed, and directed messages go both ways on either (a relay's
 * restart: test/nat-relay.node.test.ts). Needs root: it fails with NatLabUnavailableError otherwise.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { getJson, type MeshProcess, postJson, stopAll, waitFor } from './mesh-process.ts';
import { createNatLab, type LabHost, type NatLab } from './nat-lab.ts';

interface Peer {
  node_id: string;
  remote_addr: string;
  relayed: boolean;
}

export const STUN_PORT = 3478;
let lab: NatLab;
let relay: MeshProcess;
let a: MeshProcess;

/** A node behind a NAT, joining through the relay (it reserves there once it finds itself private), asking the relay's STUN. */
export async function startNatted(lab: NatLab, host: LabHost, relay: MeshProcess, bootstrap: readonly string[] = []): Promise<MeshProcess> {
  const relayAddress = lab.tcpAddress(relay);
  return lab.startNode(host, {
    bootstrap: [relayAddress, ...bootstrap],
    extraArgs: ['--stun', `stun:${lab.public[0]!.address}:${STUN_PORT}`],
  });
}

/** `node`'s address through the relay (where it is reached behind its NAT). */
export function circuitAddress(lab: NatLab, relay: MeshProcess, node: MeshProcess): string {
  const peerId = lab.tcpAddress(node).split('/p2p/')[1]!;
  return `${lab.tcpAddress(relay)}/p2p-circuit/p2p/${peerId}`;
}

export async function peerOf(from: MeshProcess, to: MeshProcess): Promise<Peer | undefined> {
  const { peers } = await getJson<{ peers: Peer[] }>(from, '/peers');
  return peers.find((p) => p.node_id === to.nodeId);
}

const hex = (text: string): string => Buffer.from(text).toString('hex');

async function exchange(x: MeshProcess, y: MeshProcess, topic: string): Promise<void> {
  for (const [from, to] of [
    [x, y],
    [y, x],
  ] as const) {
    const sent = await postJson(from, '/mesh/send', { to: to.nodeId, topic, payload_hex: hex(`from ${from.nodeId.slice(0, 8)}`) });
    if (sent.status !== 200) console.log(JSON.stringify(await getJson(from, '/peers')), from.log(), to.log());
    assert.equal(sent.status, 200, JSON.stringify(sent.body));
    const inbox = await getJson<{ messages: { from: string; topic: string; payload_hex: string }[] }>(to, `/mesh/messages?topic=${topic}`);
    assert.ok(
      inbox.messages.some((m) => m.from === from.nodeId && m.payload_hex === hex(`from ${from.nodeId.slice(0, 8)}`)),
      `${topic}: ${JSON.stringify(inbox.messages)}`,
    );
  }
}

before(async () => {
  lab = await createNatLab();
  relay = await lab.startNode(lab.public[0]!, { extraArgs: ['--stun-port', String(STUN_PORT)] });
  a = await startNatted(lab, lab.natted[0]!, relay);
});
after(async () => {
  await lab?.close();
  await stopAll();
});

test('A and B behind cone NATs meet through the relay, end up direct over WebRTC, and message both ways', async () => {
  const b = await startNatted(lab, lab.natted[1]!, relay, [circuitAddress(lab, relay, a)]);
  const peer = await waitFor(
    'B upgraded to a direct connection to A',
    async () => {
      const p = await peerOf(b, a);
      return p !== undefined && !p.relayed ? p : undefined;
    },
    30_000,
  );
  // A WebRTC connection, named by the relay address it was signalled through.
  assert.match(peer.remote_addr, /\/p2p-circuit\/webrtc\/p2p\//);
  const ofA = await waitFor('A sees B direct', async () => {
    const p = await peerOf(a, b);
    return p !== undefined && !p.relayed ? p : undefined;
  });
  assert.equal(ofA.relayed, false);
  await exchange(a, b, 'punched');
});

test('A and C (symmetric NAT) stay relayed, say so, and still message both ways', async () => {
  const c = await startNatted(lab, lab.natted[2]!, relay, [circuitAddress(lab, relay, a)]);
  const peer = await waitFor('C reaches A through the relay', async () => await peerOf(c, a), 30_000);
  assert.equal(peer.relayed, true);
  assert.match(peer.remote_addr, /\/p2p-circuit\/p2p\//);
  await exchange(a, c, 'relayed');
  // The upgrade fails (ICE finds no path through a symmetric NAT) and the connection is kept.
  await waitFor('C gave up on the upgrade', async () => c.log().includes('stays relayed'), 30_000);
  assert.equal((await peerOf(c, a))?.relayed, true);
  await exchange(a, c, 'still-relayed');
});
