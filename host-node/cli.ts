/**
 * `mesh <command>`: the one command-line entry for everything the project runs.
 * Each command lives in its own module and is loaded only when asked for.
 */

const USAGE = `Usage: mesh <command> [options]

Commands:
  node                     run a mesh node (data in ~/.mesh, HTTP API on 127.0.0.1:8844)
  directory                serve the manufacturer directory (127.0.0.1:8080)
  directory import         build the directory's dataset from the public sources
  bench <name>             run a benchmark and update bench/RESULTS.md (names: crypto, directory, ledger)
  identity backup|restore  move the node's key in or out, on the terminal only
  help                     show this text
`;

const NODE_USAGE = `Usage: mesh node [options]

Options:
  --data-dir DIR             data directory (default ~/.mesh)
  --host ADDR                HTTP API address (default 127.0.0.1)
  --port N                   HTTP API port (default 8844)
  --p2p-port N               libp2p TCP port; WebSockets listen on the next port
  --bootstrap MULTIADDR      a peer to join through (repeatable)
  --mine                     produce blocks
  --devnet                   use the separate local development chain
  --block-interval-ms N      block interval on the devnet

The node host is not in this build yet: this release ships the core's crypto and encodings.
`;

const PENDING: Record<string, string> = {
  node: NODE_USAGE,
  identity:
    'Usage: mesh identity backup --out FILE | mesh identity restore --in FILE [--force]\n\nIdentities arrive with the node host; not in this build yet.\n',
};

/** Runs the command in `args` and resolves to the process exit code. */
export async function main(args: string[]): Promise<number> {
  const [command, ...rest] = args;
  if (command === undefined || command === 'help' || command === '--help' || command === '-h') {
    process.stdout.write(USAGE);
    return command === undefined ? 2 : 0;
  }
  if (command === 'directory') {
    if (rest[0] === 'import') {
      const { runImport } = await import('../directory/import/cli.ts');
      return runImport(rest.slice(1));
    }
    const { runDirectoryCommand } = await import('../directory/adapter/node.ts');
    return runDirectoryCommand(rest);
  }
  if (command === 'bench') {
    const { runBench } = await import('../bench/cli.ts');
    return runBench(rest);
  }
  const pending = PENDING[command];
  if (pending !== undefined) {
    process.stdout.write(pending);
    return 0;
  }
  process.stderr.write(`mesh: unknown command ${JSON.stringify(command)}\n\n${USAGE}`);
  return 2;
}
