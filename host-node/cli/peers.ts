/** `mesh peers`: the running node's connected peers (GET /peers), as a table or as JSON. */
import type { PeerView } from '../../core/netgraph/peer-pings.ts';
import { clientOptions, NodeClient } from './client.ts';
import { command, EXIT, flag } from './command.ts';
import { columns } from './table.ts';

/** A round trip for people: whole ms from 10 ms, else one decimal. */
const ms = (value: number): string => (value >= 10 ? `${Math.round(value)}` : value.toFixed(1));

/** GET /peers as a table for people: node id prefix (whole in --json), direction, height, round trip, since when, address. */
export function formatPeers(peers: readonly PeerView[]): string {
  const head = ['NODE', 'DIR', 'HEIGHT', 'RTT MS', 'SAMPLES', 'SINCE', 'ADDRESS'];
  const rows = peers.map((p) => [
    p.node_id.slice(0, 16),
    // A peer reached only through a relay: small requests only until it is upgraded (docs/network.md).
    `${p.direction === 'outbound' ? 'out' : 'in'}${p.relayed ? '/relay' : ''}`,
    p.height === null ? '-' : String(p.height),
    p.rtt_ms === null ? '-' : ms(p.rtt_ms),
    p.rtt_samples.map(ms).join(' ') || '-',
    new Date(p.connected_since * 1000).toISOString().replace('.000Z', 'Z'),
    p.multiaddrs[0] ?? p.remote_addr,
  ]);
  return columns([head, ...rows]);
}

export const peersCommand = command({
  description:
    "Lists the running node's connected peers: node id, who dialled (out: this node, in: the peer; /relay: reached only through a relay), the height it announced, the median of its last round trips and the round trips themselves (pinged every 10 s or so), when it connected (UTC), and where it listens.",
  options: { ...clientOptions, json: flag('print the answer of GET /peers as it is') },
  run: async ({ options }, io) => {
    const answer = await (await NodeClient.find(options)).get<{ peers: PeerView[] }>('/peers');
    if (options.json) io.out(`${JSON.stringify(answer, null, 2)}\n`);
    else if (answer.peers.length === 0) io.err('no peers connected\n');
    else io.out(formatPeers(answer.peers));
    return EXIT.done;
  },
});
