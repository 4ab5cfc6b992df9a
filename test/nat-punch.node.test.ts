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
import { type MeshProcess, stopAll, waitFor } from './mesh-process.ts';
import { createNatLab, type NatLab } from './nat-lab.ts';
import { circuitAddress, exchange, peerOf, startNatted, startRelay } from './nat-nodes.ts';

let lab: NatLab;
let relay: MeshProcess;
let a: MeshProcess;

before(async () => {
  lab = await createNatLab();
  relay = await startRelay(lab);
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
