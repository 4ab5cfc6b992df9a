/**
 * `mesh netgraph`: the running node's network graph (GET /netgraph, docs/netgraph.md): its
 * coordinate and the mesh's figures, the link samples it holds (signed by both ends) and the
 * coordinates of other nodes; `mesh netgraph rtt <node-id>` the RTT to one node, measured or
 * predicted (GET /netgraph/rtt).
 */

import { toHex } from '../../core/encoding/hex.ts';
import type { CoordinateView, NetgraphView, RttAnswer } from '../../core/netgraph/netgraph.ts';
import { clientOptions, NodeClient } from './client.ts';
import { command, EXIT, entry, flag, positional } from './command.ts';
import { columns } from './table.ts';
import { nodeId } from './values.ts';

const json = flag("print the node's answer as JSON");

/** A round trip for people: whole ms from 10 ms, else two decimals. */
const ms = (value: number): string => (value >= 10 ? `${Math.round(value)}` : value.toFixed(2));
const time = (at: number): string => new Date(at).toISOString().replace(/\.\d{3}Z$/, 'Z');
const short = (id: string): string => `${id.slice(0, 16)}…`;
/** A coordinate's distance from the origin and height, in ms (coordinates are in seconds). */
const place = (c: CoordinateView): string => `|vec| ${ms(1000 * Math.hypot(...c.vec))} ms, height ${ms(1000 * c.height)} ms, error ${c.error.toFixed(3)}`;

/** GET /netgraph for people: this node's coordinate and figures, then the links, then the coordinates. */
export function formatNetgraph(view: NetgraphView): string {
  const { mesh } = view;
  const lines = [
    `node        ${view.node_id}`,
    `coordinate  ${place(view.coordinate)}`,
    `mesh        median RTT ${mesh.median_rtt_ms === null ? '-' : `${ms(mesh.median_rtt_ms)} ms`}, reachable ${mesh.reachable_frac === null ? '-' : `${Math.round(100 * mesh.reachable_frac)} %`}, regions ${mesh.regions}`,
    '',
  ];
  const links =
    view.links.length === 0
      ? 'no link samples\n'
      : columns([
          ['A', 'B', 'RTT MS', 'JITTER MS', 'LOSS', 'MEASURED'],
          ...view.links.map((l) => [short(l.a), short(l.b), ms(l.rtt_ms), ms(l.jitter_ms), `${Math.round(100 * l.loss)} %`, time(l.measured_at)]),
        ]);
  const coordinates =
    view.coordinates.length === 0
      ? 'no coordinates of other nodes\n'
      : columns([['NODE', 'COORDINATE', 'UPDATED'], ...view.coordinates.map((c) => [short(c.node_id), place(c.coordinate), time(c.updated_at)])]);
  return `${lines.join('\n')}\n${links}\n${coordinates}`;
}

/** GET /netgraph/rtt for people: one line. */
export function formatRtt(answer: RttAnswer): string {
  return answer.source === 'measured'
    ? `${ms(answer.rtt_ms)} ms measured (jitter ${ms(answer.jitter_ms)} ms, loss ${Math.round(100 * answer.loss)} %, at ${time(answer.measured_at)})\n`
    : `${ms(answer.rtt_ms)} ms predicted from coordinates (error ${answer.error.toFixed(3)}, theirs of ${time(answer.updated_at)})\n`;
}

const rttCommand = command({
  description:
    'Prints the RTT from the running node to another: measured by its pings or a link sample when it has one, else predicted from the two network coordinates (exit 1 when it knows neither).',
  options: { ...clientOptions, json },
  positionals: { node: positional('node-id', 'the other node (64 lowercase hex)', nodeId) },
  run: async ({ options, args }, io) => {
    const answer = await (await NodeClient.find(options)).get<RttAnswer>(`/netgraph/rtt?to=${toHex(args.node)}`);
    io.out(options.json ? `${JSON.stringify(answer)}\n` : formatRtt(answer));
    return EXIT.done;
  },
});

export const netgraphCommand = command({
  description:
    "Shows the running node's network graph: its network coordinate and the mesh's figures (median RTT of the link samples, share of known nodes reachable, regions), the link samples it holds (RTT, jitter, loss, signed by both ends) and the coordinates other nodes gossiped.",
  options: { ...clientOptions, json },
  commands: [entry('rtt', 'the RTT to a node, measured or predicted', () => rttCommand)],
  run: async ({ options }, io) => {
    const view = await (await NodeClient.find(options)).get<NetgraphView>('/netgraph');
    io.out(options.json ? `${JSON.stringify(view, null, 2)}\n` : formatNetgraph(view));
    return EXIT.done;
  },
});
