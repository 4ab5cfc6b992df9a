/**
 * `mesh identity backup|restore`: the only ways the node's key leaves or enters a data directory.
 * Terminal only, by design: the HTTP API has no route that reads or sets the key.
 */
import { mkdir, stat } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { toHex } from '../core/encoding/hex.ts';
import { DataDirError, IDENTITY_FILE, readIdentityFile, writeIdentityFile } from './data-dir.ts';

export const IDENTITY_USAGE = `Usage: mesh identity backup --out FILE [--data-dir DIR] [--force]
       mesh identity restore --in FILE [--data-dir DIR] [--force]

  backup    copy the node's identity (its secret key) to FILE, mode 0600; --force overwrites FILE
  restore   check FILE and install it as the node's identity; --force replaces a different one
  --data-dir DIR   the node's data directory (default ~/.mesh)

Keep the backup private: whoever holds it can act as the node.
`;

class UsageError extends Error {}

interface IdentityArgs {
  command: 'backup' | 'restore';
  file: string;
  dataDir: string;
  force: boolean;
}

function parse(args: string[]): IdentityArgs | 'help' {
  let parsed;
  try {
    parsed = parseArgs({
      args,
      allowPositionals: true,
      strict: true,
      options: {
        out: { type: 'string' },
        in: { type: 'string' },
        'data-dir': { type: 'string' },
        force: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
  const { values, positionals } = parsed;
  if (values.help) return 'help';
  const [command, ...extra] = positionals;
  if (command !== 'backup' && command !== 'restore') {
    throw new UsageError(command === undefined ? 'missing subcommand' : `unknown subcommand ${JSON.stringify(command)}`);
  }
  if (extra.length > 0) throw new UsageError(`unexpected argument ${JSON.stringify(extra[0])}`);
  const [wanted, unwanted] = command === 'backup' ? (['out', 'in'] as const) : (['in', 'out'] as const);
  if (values[unwanted] !== undefined) throw new UsageError(`${command} takes --${wanted}, not --${unwanted}`);
  const file = values[wanted];
  if (file === undefined || file === '') throw new UsageError(`${command} needs --${wanted} FILE`);
  if (values['data-dir'] === '') throw new UsageError('--data-dir needs a directory');
  return {
    command,
    file: resolve(file),
    dataDir: resolve(values['data-dir'] ?? join(homedir(), '.mesh')),
    force: values.force === true,
  };
}

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    (error: { code?: string }) => {
      if (error.code === 'ENOENT') return false;
      throw error;
    },
  );
}

async function backup({ file, dataDir, force }: IdentityArgs): Promise<number> {
  const source = join(dataDir, IDENTITY_FILE);
  if (!(await exists(source))) {
    process.stderr.write(`mesh identity: ${dataDir} has no identity (no ${IDENTITY_FILE}); start \`mesh node\` there once, or restore one\n`);
    return 1;
  }
  const key = await readIdentityFile(source);
  try {
    await writeIdentityFile(file, key, { force });
  } catch (error) {
    if (error instanceof DataDirError && error.code === 'identity-exists') {
      process.stderr.write(`mesh identity: ${file} already exists; not overwritten (use --force to replace it)\n`);
      return 1;
    }
    throw error;
  }
  process.stdout.write(`backed up node_id ${toHex(key.publicKey)} to ${file}\n`);
  return 0;
}

async function restore({ file, dataDir, force }: IdentityArgs): Promise<number> {
  // The whole file is checked before anything in the data directory is touched.
  const key = await readIdentityFile(file);
  const nodeId = toHex(key.publicKey);
  const target = join(dataDir, IDENTITY_FILE);
  const present = await exists(target);
  if (present) {
    let current: string | undefined;
    let problem = '';
    try {
      current = toHex((await readIdentityFile(target)).publicKey);
    } catch (error) {
      problem = error instanceof Error ? error.message : String(error);
    }
    if (current === nodeId) {
      process.stdout.write(`node_id ${nodeId} is already installed in ${dataDir}\n`);
      return 0;
    }
    if (!force) {
      const what = current === undefined ? `an unreadable identity (${problem})` : `node_id ${current}`;
      process.stderr.write(
        `mesh identity: ${dataDir} already holds ${what}; not replaced by node_id ${nodeId} (use --force to replace it, and back it up first)\n`,
      );
      return 1;
    }
  }
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  try {
    // Without --force the write is exclusive, so an identity created meanwhile is never overwritten.
    await writeIdentityFile(target, key, { force: present });
  } catch (error) {
    if (error instanceof DataDirError && error.code === 'identity-exists') {
      process.stderr.write(`mesh identity: an identity appeared in ${dataDir} meanwhile; not replaced\n`);
      return 1;
    }
    throw error;
  }
  process.stdout.write(`restored node_id ${nodeId} into ${dataDir}\n`);
  return 0;
}

/** Runs `mesh identity …` (`args` after the word `identity`); resolves to the exit code: 0, 1 failure, 2 usage. */
export async function runIdentityCommand(args: string[]): Promise<number> {
  let parsed: IdentityArgs | 'help';
  try {
    parsed = parse(args);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    process.stderr.write(`mesh identity: ${error.message}\n${IDENTITY_USAGE}`);
    return 2;
  }
  if (parsed === 'help') {
    process.stdout.write(IDENTITY_USAGE);
    return 0;
  }
  try {
    return parsed.command === 'backup' ? await backup(parsed) : await restore(parsed);
  } catch (error) {
    process.stderr.write(`mesh identity: ${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  }
}
