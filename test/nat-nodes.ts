/**
 * `mesh node` processes behind the NAT lab's routers (test/nat-lab.ts), as the lab tests start
 * them: the public node is the relay and the STUN server; a NATed node joins through it, finds
 * itself private, keeps a reservation there and asks it for its public mapping. Also what the
 * tests read of them: a peer's entry in GET /peers, and directed messages both ways.
 */
import assert from 'node:assert/strict';
import { getJson, type MeshProcess, postJson, type StartOptions } from './mesh-process.ts';
import type { LabHost, NatLab } from './nat-lab.ts';

export interface Peer {
  node_id: string;
  multiaddrs: string[];
  remote_addr: string;
  relayed: boolean;
}

export const STUN_PORT = 3478;

/** The relay and STUN server on the lab's first public host. */
export function startRelay(lab: NatLab, options: StartOptions = {}): Promise<MeshProcess> {
  return lab.startNode(lab.public[0]!, { ...options, extraArgs: ['--stun-port', String(STUN_PORT), ...(options.extraArgs ?? [])] });
}

/** A node behind a NAT, joining through the relay (it reserves there once it finds itself private), asking the relay's STUN. */
export async function startNatted(
  lab: NatLab,
  host: LabHost,
  relay: MeshProcess,
  bootstrap: readonly string[] = [],
  options: StartOptions = {},
): Promise<MeshProcess> {
  return lab.startNode(host, {
    ...options,
    bootstrap: [lab.tcpAddress(relay), ...bootstrap],
    extraArgs: ['--stun', `stun:${lab.public[0]!.address}:${STUN_PORT}`, ...(options.extraArgs ?? [])],
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

/** A directed message from each node to the other on `topic`, each checked in the receiver's inbox. */
export async function exchange(x: MeshProcess, y: MeshProcess, topic: string): Promise<void> {
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
