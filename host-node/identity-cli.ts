/**
 * `mesh identity backup|restore`: the only ways the node's key leaves or enters a data directory.
 * Terminal only, by design: the HTTP API has no route that reads or sets the key.
 */
import { mkdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { IdentityFileError } from '../core/crypto/identity-file.ts';
import { isSealedBackup, openIdentity, plainIdentityText, sealIdentity } from '../core/crypto/sealed-identity.ts';
import { toHex } from '../core/encoding/hex.ts';
import { command, entry, flag, option } from './cli/command.ts';
import { readPassphrase } from './cli/passphrase.ts';
import { DataDirError, dataDirOption, IDENTITY_FILE, readIdentityFile, readIdentityText, writeIdentityFile, writeSecretFile } from './data-dir.ts';
import { fileExists } from './file-exists.ts';

interface IdentityArgs {
  file: string;
  dataDir: string;
  force: boolean;
  passphraseFile: string | undefined;
}

const PRIVATE =
  'The backup is sealed with a passphrase (Argon2id, AES-256-GCM): keep both, apart. Without the passphrase the backup cannot be opened, and no one can recover it.';
const CLEAR_WARNING = 'WARNING: the backup holds the secret key in the clear: whoever reads it can act as the node.';

async function backup({ file, dataDir, force, passphraseFile }: IdentityArgs, unencrypted: boolean): Promise<number> {
  const source = join(dataDir, IDENTITY_FILE);
  if (!(await fileExists(source))) {
    throw new Error(`${dataDir} has no identity (no ${IDENTITY_FILE}); start \`mesh node\` there once, or restore one`);
  }
  const key = await readIdentityFile(source);
  if (!force && (await fileExists(file))) throw new Error(`${file} already exists; not overwritten (use --force to replace it)`);
  let text: string;
  if (unencrypted) {
    process.stderr.write(`${CLEAR_WARNING}\n`);
    text = plainIdentityText(key);
  } else {
    const passphrase = await readPassphrase({ file: passphraseFile, prompt: 'Passphrase for the backup: ', confirm: true });
    text = await sealIdentity(key, passphrase).catch(passphraseProblem);
  }
  try {
    await writeSecretFile(file, text, { force });
  } catch (error) {
    if (error instanceof DataDirError && error.code === 'identity-exists') {
      throw new Error(`${file} already exists; not overwritten (use --force to replace it)`);
    }
    throw error;
  }
  process.stdout.write(`backed up node_id ${toHex(key.publicKey)} to ${file}\n`);
  return 0;
}

/** A passphrase refused (too short, or not the backup's) as one line for the terminal. */
function passphraseProblem(error: unknown): never {
  if (error instanceof IdentityFileError && error.code === 'identity-passphrase') throw new Error(error.message);
  throw error;
}

async function restore({ file, dataDir, force, passphraseFile }: IdentityArgs): Promise<number> {
  // The whole file is checked, and opened, before anything in the data directory is touched.
  const text = await readIdentityText(file);
  const passphrase = isSealedBackup(text) ? await readPassphrase({ file: passphraseFile, prompt: `Passphrase of ${file}: ` }) : undefined;
  const key = await openIdentity(text, passphrase).catch((error: unknown) => {
    if (error instanceof IdentityFileError && error.code === 'identity-passphrase') throw new Error(`${file}: ${error.message}`);
    if (error instanceof IdentityFileError) throw new DataDirError(error.code, `${file} is not a valid mesh identity: ${error.message}`);
    throw error;
  });
  const nodeId = toHex(key.publicKey);
  const target = join(dataDir, IDENTITY_FILE);
  const present = await fileExists(target);
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
      throw new Error(`${dataDir} already holds ${what}; not replaced by node_id ${nodeId} (use --force to replace it, and back it up first)`);
    }
  }
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  try {
    // Without --force the write is exclusive, so an identity created meanwhile is never overwritten.
    await writeIdentityFile(target, key, { force: present });
  } catch (error) {
    if (error instanceof DataDirError && error.code === 'identity-exists') {
      throw new Error(`an identity appeared in ${dataDir} meanwhile; not replaced`);
    }
    throw error;
  }
  process.stdout.write(`restored node_id ${nodeId} into ${dataDir}\n`);
  return 0;
}

function identityArgs(file: string, options: { 'data-dir': string; force: boolean; 'passphrase-file': string | undefined }): IdentityArgs {
  return { file: resolve(file), dataDir: resolve(options['data-dir']), force: options.force, passphraseFile: options['passphrase-file'] };
}

const passphraseFileOption = option({ value: 'FILE', description: 'read the passphrase from the first line of FILE (- for standard input) instead of asking' });

const backupCommand = command({
  description: "Seals the node's identity (its secret key) with a passphrase into FILE, mode 0600.",
  options: {
    out: option({ value: 'FILE', description: 'the backup file to write', required: true }),
    'data-dir': dataDirOption,
    force: flag('overwrite FILE if it exists'),
    'passphrase-file': passphraseFileOption,
    unencrypted: flag('write the key in the clear, without a passphrase (warns)'),
  },
  notes: PRIVATE,
  run: ({ options }) => backup(identityArgs(options.out, options), options.unencrypted),
});

const restoreCommand = command({
  description: "Opens the backup FILE (asking its passphrase) and installs it as the node's identity.",
  options: {
    in: option({ value: 'FILE', description: 'the backup file to read', required: true }),
    'data-dir': dataDirOption,
    force: flag('replace a different identity already in the data directory (back it up first)'),
    'passphrase-file': passphraseFileOption,
  },
  run: ({ options }) => restore(identityArgs(options.in, options)),
});

/** `mesh identity backup|restore`. */
export const identityCommand = command({
  description: "Moves the node's identity (its secret key) out of or into a data directory, on the terminal only.",
  notes: PRIVATE,
  commands: [
    entry('backup', "copy the node's identity to a file", () => backupCommand),
    entry('restore', "install a backed-up identity as the node's", () => restoreCommand),
  ],
});
