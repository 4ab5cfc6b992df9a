/**
 * `mesh tunnel`: TCP tunnels between nodes from the command line, over the running node's /tunnel
 * routes (docs/tunnel.md, docs/cli.md), the way Kubo's `ipfs p2p listen/forward` works: `listen`
 * exposes a local service to chosen nodes, `forward` opens a local port that reaches one, `ls`
 * lists the tunnels and `close` closes one.
 */
import { isProtocolName } from '../../core/net/network.ts';
import { loopbackRule } from '../../core/tunnel/address.ts';
import type { ForwardView, ListenView, TunnelView } from '../../core/tunnel/types.ts';
import { clientOptions, NodeClient } from './client.ts';
import { command, EXIT, entry, flag, list, option, type Parser, positional, UsageError } from './command.ts';
import { idPrefix, uniqueId } from './id-prefix.ts';
import { columns } from './table.ts';
import { nodeIdText } from './values.ts';

const json = flag("print the node's answer as JSON");

const protocol: Parser<string> = (text, name) => {
  if (!isProtocolName(text)) throw new UsageError(`${name} must be 1 to 64 of a-z 0-9 . _ - (starting with a letter or digit), got ${JSON.stringify(text)}`);
  return text;
};

const address =
  (anyPort: boolean): Parser<string> =>
  (text, name) => {
    const verdict = loopbackRule(text, { anyPort });
    if (verdict !== true) throw new UsageError(`${name} ${verdict}`);
    return text;
  };

const tunnelId: Parser<string> = idPrefix('a tunnel id (16 lowercase hex characters)', 16);

const short = (hex: string): string => `${hex.slice(0, 16)}…`;

/** GET /tunnel as a table for people. */
export function formatTunnels(tunnels: readonly TunnelView[]): string {
  const head = ['ID', 'KIND', 'PROTOCOL', 'LOCAL', 'PEERS', 'OPEN', 'CARRIED', 'REFUSED'];
  const rows = tunnels.map((t) => {
    const [local, peers] =
      t.kind === 'listen' ? [`→ ${t.target}`, t.allow.length === 1 ? short(t.allow[0]!) : `${t.allow.length} nodes`] : [t.address, short(t.node)];
    return [t.id, t.kind, t.protocol, local, peers, String(t.connections), String(t.accepted), String(t.refused)];
  });
  return columns([head, ...rows]);
}

const listenCommand = command({
  description:
    'Exposes a service on this machine to chosen nodes under a protocol name: each connection they open on it reaches <target>. Nodes not allowed are refused. Prints the tunnel id.',
  options: {
    ...clientOptions,
    allow: list({ value: 'NODE_ID', description: 'a node that may connect (at least one)', parse: nodeIdText }),
    json,
  },
  positionals: {
    protocol: positional('protocol', 'the name peers ask for: 1 to 64 of a-z 0-9 . _ - (the libp2p protocol /mesh/tunnel/1/<protocol>)', protocol),
    target: positional('target', 'the local service, host:port on the loopback interface (127.0.0.1:8080)', address(false)),
  },
  run: async ({ options, args }, io) => {
    if (options.allow.length === 0) throw new UsageError('give at least one --allow NODE_ID: a listener serves only the nodes it names');
    const client = await NodeClient.find(options);
    const view = await client.post<ListenView>('/tunnel', { listen: { protocol: args.protocol, target: args.target, allow: options.allow } });
    if (options.json) io.out(`${JSON.stringify(view, null, 2)}\n`);
    else {
      io.err(`tunnel ${view.id}: ${view.protocol} → ${view.target} for ${view.allow.length} node${view.allow.length === 1 ? '' : 's'}\n`);
      io.out(`${view.id}\n`);
    }
    return EXIT.done;
  },
});

const forwardCommand = command({
  description:
    "Opens a port on this machine that reaches a node's listener: each connection to it is carried to the service that node exposes under <protocol>. Prints the port's address.",
  options: {
    ...clientOptions,
    bind: option({
      value: 'ADDR',
      description: 'where to listen, host:port on the loopback interface; port 0 picks a free one',
      parse: address(true),
      default: '127.0.0.1:0',
    }),
    json,
  },
  positionals: {
    node: positional('node-id', 'the node that listens: its node id, 64 lowercase hex', nodeIdText),
    protocol: positional('protocol', 'the protocol name it listens on', protocol),
  },
  run: async ({ options, args }, io) => {
    const client = await NodeClient.find(options);
    const view = await client.post<ForwardView>('/tunnel', { forward: { protocol: args.protocol, node: args.node, bind: options.bind } });
    if (options.json) io.out(`${JSON.stringify(view, null, 2)}\n`);
    else {
      io.err(`tunnel ${view.id}: ${view.address} → ${view.protocol} on ${short(view.node)}\n`);
      io.out(`${view.address}\n`);
    }
    return EXIT.done;
  },
});

const lsCommand = command({
  description: 'Lists the tunnels of the running node: what each listens on or reaches, and the connections it has open, carried and refused.',
  options: { ...clientOptions, json },
  run: async ({ options }, io) => {
    const tunnels = await (await NodeClient.find(options)).get<TunnelView[]>('/tunnel');
    if (options.json) io.out(`${JSON.stringify(tunnels, null, 2)}\n`);
    else if (tunnels.length === 0) io.err('no tunnels\n');
    else io.out(formatTunnels(tunnels));
    return EXIT.done;
  },
});

const closeCommand = command({
  description: 'Closes a tunnel: its port or protocol is given up and the connections it carries are reset.',
  options: clientOptions,
  positionals: { id: positional('id', 'the tunnel id, or its first characters, as mesh tunnel ls shows it', tunnelId) },
  run: async ({ options, args }, io) => {
    const client = await NodeClient.find(options);
    const id =
      args.id.length === 16
        ? args.id
        : uniqueId(
            (await client.get<TunnelView[]>('/tunnel')).map((t) => t.id),
            args.id,
            { none: 'no tunnel', plural: 'tunnels' },
          );
    await client.delete(`/tunnel/${id}`);
    io.err(`closed tunnel ${id}\n`);
    return EXIT.done;
  },
});

export const tunnelCommand = command({
  description:
    'TCP tunnels between nodes over authenticated libp2p streams: listen exposes a local service to chosen nodes, forward reaches one from a local port. Tunnels last as long as the node.',
  commands: [
    entry('listen', 'expose a local service to chosen nodes under a protocol name', () => listenCommand),
    entry('forward', "open a local port that reaches a node's listener", () => forwardCommand),
    entry('ls', "list the node's tunnels", () => lsCommand),
    entry('close', 'close a tunnel and reset its connections', () => closeCommand),
  ],
});
