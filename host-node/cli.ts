/**
 * `mesh <command>`: the one command-line entry for everything the project runs. Each command is
 * defined in its own module (on the kit in `cli/`) and loaded only when asked for.
 */
import { command, EXIT, entry } from './cli/command.ts';
import { exitOnClosedPipe, processIo, runCommand } from './cli/run.ts';

const mesh = command({
  notes: 'mesh --version prints the version.',
  commands: [
    entry('node', 'run a mesh node (data in ~/.mesh, HTTP API on 127.0.0.1:8844)', async () => (await import('./node-command.ts')).nodeCommand),
    entry('status', "show the running node's height and balances", async () => (await import('./cli/status.ts')).statusCommand),
    entry('send', 'send credits to a node: mesh send <node-id|name> <credits>', async () => (await import('./cli/send.ts')).sendCommand),
    entry('bond', "lock credits into the running node's bond: mesh bond <credits>", async () => (await import('./cli/bond.ts')).bondCommand),
    entry('unbond', "take credits out of the running node's bond: mesh unbond <credits>", async () => (await import('./cli/bond.ts')).unbondCommand),
    entry('peers', "list the running node's connected peers, with their round-trip times", async () => (await import('./cli/peers.ts')).peersCommand),
    entry('traffic', 'print the bytes the running node sent, by gossip topic and protocol', async () => (await import('./cli/traffic.ts')).trafficCommand),
    entry(
      'profile',
      'measure this machine and have the node sign and gossip its profile; profile ls, profile show',
      async () => (await import('./cli/profile.ts')).profileCommand,
    ),
    entry('fabric', "print the running node's fabric statistics (profiles, atlas, links)", async () => (await import('./cli/profile.ts')).fabricCommand),
    entry(
      'netgraph',
      "show the running node's network coordinate, link samples and coordinates; netgraph rtt <node-id>",
      async () => (await import('./cli/netgraph.ts')).netgraphCommand,
    ),
    entry(
      'blocks',
      "print the running node's blocks from a height; --follow goes on with new ones",
      async () => (await import('./cli/blocks.ts')).blocksCommand,
    ),
    entry(
      'signals',
      'print the signals the running node keeps (--from, --to); --follow goes on with new ones',
      async () => (await import('./cli/signals.ts')).signalsCommand,
    ),
    entry(
      'transactions',
      'print the transactions the running node streams, as they come (--held: those it holds first)',
      async () => (await import('./cli/transactions.ts')).transactionsCommand,
    ),
    entry('msg', 'app messages: send, request, reply, listen, subscribe, publish', async () => (await import('./cli/msg.ts')).msgCommand),
    entry('names', 'node names: claim, resolve, ls', async () => (await import('./cli/names.ts')).namesCommand),
    entry('jobs', 'container jobs: run, ls, show, logs, stop, expire', async () => (await import('./cli/jobs.ts')).jobsCommand),
    entry(
      'deploy',
      'run a container on a chosen host, as its admin or with a capability token',
      async () => (await import('./cli/placement.ts')).deployCommand,
    ),
    entry('kill', 'stop a job on a chosen host', async () => (await import('./cli/placement.ts')).killCommand),
    entry('cap', 'capability tokens: issue, delegate, inspect, revoke', async () => (await import('./cli/cap.ts')).capCommand),
    entry('trust', 'make another node an admin of the running node (--withdraw: no longer)', async () => (await import('./cli/trust.ts')).trustCommand),
    entry('channel', 'payment channels: open, pay, close, expire, ls', async () => (await import('./cli/channels.ts')).channelCommand),
    entry('tunnel', 'TCP tunnels between nodes: listen, forward, ls, close', async () => (await import('./cli/tunnel.ts')).tunnelCommand),
    entry(
      'sim',
      'run many full nodes in this process on simulated time, checking invariants; the same seed prints the same report',
      async () => (await import('./cli/sim.ts')).simCommand,
    ),
    entry('doctor', 'check that this machine can host jobs, with the fix for each problem', async () => (await import('./doctor.ts')).doctorCommand),
    entry('identity', "move the node's key out or in (backup, restore), on the terminal only", async () => (await import('./identity-cli.ts')).identityCommand),
    entry(
      'directory',
      'serve the manufacturer directory (127.0.0.1:8080); directory import builds its dataset',
      async () => (await import('../directory/adapter/node.ts')).directoryCommand,
    ),
    entry(
      'bench',
      'run a benchmark and update bench/RESULTS.md (capabilities, channels, coords, crypto, directory, jobs, ledger, mesh, messaging, netgraph, startup, tunnel)',
      async () => (await import('../bench/cli.ts')).benchCommand,
    ),
  ],
});

/** `mesh 0.1.0`: the version in package.json. */
async function version(): Promise<string> {
  const { readFile } = await import('node:fs/promises');
  const { version } = JSON.parse(await readFile(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };
  return `mesh ${version}\n`;
}

/** Runs the command in `args` as the `mesh` process, and resolves to its exit code. */
export async function main(args: string[]): Promise<number> {
  exitOnClosedPipe();
  if (args.length === 1 && args[0] === '--version') {
    processIo.out(await version());
    return EXIT.done;
  }
  return runCommand(mesh, args, 'mesh');
}
