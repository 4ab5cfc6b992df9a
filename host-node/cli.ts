/**
 * `mesh <command>`: the one command-line entry for everything the project runs.
 * Each command lives in its own module and is loaded only when asked for.
 */

const USAGE = `Usage: mesh <command> [options]

Commands:
  node                     run a mesh node (data in ~/.mesh, HTTP API on 127.0.0.1:8844)
  directory                serve the manufacturer directory (127.0.0.1:8080)
  directory import         build the directory's dataset from the public sources
  bench <name>             run a benchmark and update bench/RESULTS.md (names: crypto, directory, ledger, mesh)
  identity backup|restore  move the node's key in or out, on the terminal only
  help                     show this text
`;

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
  if (command === 'node') {
    const { runNodeCommand } = await import('./node-command.ts');
    return runNodeCommand(rest);
  }
  if (command === 'identity') {
    const { runIdentityCommand } = await import('./identity-cli.ts');
    return runIdentityCommand(rest);
  }
  process.stderr.write(`mesh: unknown command ${JSON.stringify(command)}\n\n${USAGE}`);
  return 2;
}
