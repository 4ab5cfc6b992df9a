/**
 * The node's data directory (default ~/.mesh): the API token, the node's identity and the chain
 * store's path. Secrets are created complete and private from the start: written to a temporary
 * file opened exclusively with mode 0600, flushed, then linked or renamed into place, so neither a
 * crash nor two starts at once can leave a half-written or world-readable token or key.
 */
import { randomBytes } from 'node:crypto';
import { chmod, link, mkdir, readFile, rename, stat, unlink } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { SigningKey } from '../core/crypto/ed25519.ts';
import { IdentityFileError, identityFileText, MAX_IDENTITY_BYTES, parseIdentityFile } from '../core/crypto/identity-file.ts';
import { isId } from '../core/encoding/hex.ts';
import { messageOf } from '../core/errors.ts';
import { writeAtomically } from './atomic-file.ts';
import { option } from './cli/command.ts';

/** What a started node needs from its data directory. */
export interface DataDir {
  dir: string;
  /** The LevelDB directory of the chain: `dir/chain`. */
  chainPath: string;
  /** The bearer token of the HTTP API (the content of `dir/api.token`). */
  token: string;
  /** The node's key; its public key is the NodeId. */
  identity: SigningKey;
  /** True when this start created the identity (a new node), false when it loaded one. */
  created: boolean;
}

/** A data directory, token or identity file that cannot be used as it is. */
export class DataDirError extends Error {
  readonly code: string;

  constructor(code: string, message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'DataDirError';
    this.code = code;
  }
}

/** The `--data-dir DIR` option of every command that works on a node's data directory. */
export const dataDirOption = option({ value: 'DIR', description: "the node's data directory", default: join(homedir(), '.mesh'), shown: '~/.mesh' });

export const TOKEN_FILE = 'api.token';
export const IDENTITY_FILE = 'identity.json';

const errnoOf = (error: unknown): string | undefined => (error as { code?: string } | null)?.code;

/**
 * Writes `data` to `path` atomically with mode 0600. With `replace`, an existing file is replaced
 * (rename); without, the write fails with EEXIST if `path` exists, checked atomically (link).
 */
function writePrivateFile(path: string, data: string, replace: boolean): Promise<void> {
  return writeAtomically(path, (file) => file.writeFile(data), { mode: 0o600, replace });
}

function parseIdentity(path: string, text: string): SigningKey {
  try {
    return parseIdentityFile(text);
  } catch (error) {
    if (error instanceof IdentityFileError) throw new DataDirError(error.code, `${path} is not a valid mesh identity: ${error.message}`);
    throw error;
  }
}

/** Reads and fully checks an identity file (type, version, hex lengths, seed derives node_id). */
export async function readIdentityFile(path: string): Promise<SigningKey> {
  return parseIdentity(path, await readIdentityText(path));
}

/** The text of an identity or backup file, refused (DataDirError) when missing, unreadable or too large. */
export async function readIdentityText(path: string): Promise<string> {
  let bytes: Buffer;
  try {
    const info = await stat(path);
    if (!info.isFile()) throw new DataDirError('identity-unreadable', `${path} is not a file`);
    if (info.size > MAX_IDENTITY_BYTES) throw new DataDirError('identity-json', `${path} is too large to be a mesh identity`);
    bytes = await readFile(path);
  } catch (error) {
    if (error instanceof DataDirError) throw error;
    if (errnoOf(error) === 'ENOENT') throw new DataDirError('identity-missing', `no identity file at ${path}`, { cause: error });
    throw new DataDirError('identity-unreadable', `cannot read ${path}: ${messageOf(error)}`, { cause: error });
  }
  return new TextDecoder().decode(bytes);
}

/**
 * Writes `key` as an identity file at `path` (mode 0600, atomically). Refuses, with a DataDirError
 * of code `identity-exists`, when `path` exists, unless `force`.
 */
export function writeIdentityFile(path: string, key: SigningKey, options: { force?: boolean } = {}): Promise<void> {
  return writeSecretFile(path, identityFileText(key), options);
}

/** Writes a secret `text` (an identity or a sealed backup) as writeIdentityFile does. */
export async function writeSecretFile(path: string, text: string, options: { force?: boolean } = {}): Promise<void> {
  try {
    await writePrivateFile(path, text, options.force === true);
  } catch (error) {
    if (errnoOf(error) === 'EEXIST') throw new DataDirError('identity-exists', `${path} already exists`, { cause: error });
    throw error;
  }
}

/** Tightens a secret file that group or others may access to 0600, with a warning. */
async function keepPrivate(path: string, warn: (line: string) => void): Promise<void> {
  const mode = (await stat(path)).mode & 0o777;
  if ((mode & 0o077) === 0) return;
  await chmod(path, 0o600);
  warn(`mesh: warning: ${path} had mode 0${mode.toString(8)} (open to group or others); set it to 0600`);
}

/**
 * Creates `path` with `make()`'s content unless it exists; true when this call created it. Exclusive
 * creation decides a race between two starts: the loser reads the winner's complete file.
 */
async function createIfMissing(path: string, make: () => string): Promise<boolean> {
  try {
    await stat(path);
    return false;
  } catch (error) {
    if (errnoOf(error) !== 'ENOENT') throw error;
  }
  try {
    await writePrivateFile(path, make(), false);
    return true;
  } catch (error) {
    if (errnoOf(error) === 'EEXIST') return false;
    throw error;
  }
}

async function loadToken(path: string, warn: (line: string) => void): Promise<string> {
  // No trailing newline: the spec makes the token "the content of the file", so a client may read it raw.
  await createIfMissing(path, () => randomBytes(32).toString('hex'));
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    throw new DataDirError('token-unreadable', `cannot read the API token ${path}: ${messageOf(error)}`, { cause: error });
  }
  const token = text.trim();
  if (token === '') throw new DataDirError('token-empty', `the API token ${path} is empty: delete it to have a new one made`);
  await keepPrivate(path, warn);
  return token;
}

async function loadIdentity(path: string, warn: (line: string) => void): Promise<{ identity: SigningKey; created: boolean }> {
  const created = await createIfMissing(path, () => identityFileText(SigningKey.generate()));
  // Read back even what was just written: the identity in use is always the one on disk.
  const identity = await readIdentityFile(path);
  await keepPrivate(path, warn);
  return { identity, created };
}

/**
 * Opens the data directory `dir`, creating it (0700), its API token and its identity on first start.
 * Throws DataDirError, changing nothing, when the token is empty or unreadable or the identity invalid.
 * `warn` receives warning lines (default: stderr).
 */
export async function openDataDir(dir: string, options: { warn?: (line: string) => void } = {}): Promise<DataDir> {
  const warn = options.warn ?? ((line: string) => process.stderr.write(`${line}\n`));
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const token = await loadToken(join(dir, TOKEN_FILE), warn);
  const { identity, created } = await loadIdentity(join(dir, IDENTITY_FILE), warn);
  return { dir, chainPath: join(dir, 'chain'), token, identity, created };
}

/** Where a running node records its HTTP API: `{ "url": …, "pid": … }`, so commands can find it. */
export const API_FILE = 'api.json';

/** A running node's record in its data directory. */
export interface ApiAddress {
  readonly url: string;
  readonly pid: number;
}

const apiRecord = (url: string): string => `${JSON.stringify({ url, pid: process.pid })}\n`;

/** Records that this process serves its HTTP API at `url` (atomically, mode 0600, replacing a stale record). */
export async function writeApiAddress(dir: string, url: string): Promise<void> {
  await writePrivateFile(join(dir, API_FILE), apiRecord(url), true);
}

/**
 * Removes this process's record (the one `writeApiAddress(dir, url)` wrote) at a clean stop, and
 * never another node's. The file is first renamed aside, which takes it atomically; if it is not
 * ours it is linked back, unless a newer record was written meanwhile (link refuses to replace
 * one). A client looking in that instant finds no record and says no node is running.
 */
export async function removeApiAddress(dir: string, url: string): Promise<void> {
  const path = join(dir, API_FILE);
  const aside = join(dir, `.${API_FILE}.${process.pid}.${randomBytes(6).toString('hex')}.removing`);
  try {
    await rename(path, aside);
  } catch {
    return; // No record: nothing to remove.
  }
  try {
    const text = await readFile(aside, 'utf8').catch(() => '');
    if (text !== apiRecord(url)) await link(aside, path).catch(() => {});
  } finally {
    await unlink(aside).catch(() => {});
  }
}

/** The NodeId (lowercase hex) an identity file states, read without touching its secret part. */
export async function readNodeId(dir: string): Promise<string> {
  const path = join(dir, IDENTITY_FILE);
  let nodeId: unknown;
  try {
    nodeId = (JSON.parse(await readFile(path, 'utf8')) as { node_id?: unknown } | null)?.node_id;
  } catch (error) {
    throw new DataDirError('identity-unreadable', `cannot read the node id in ${path}: ${messageOf(error)}`, { cause: error });
  }
  if (!isId(nodeId)) throw new DataDirError('identity-hex', `${path} states no node_id of 64 lowercase hex characters`);
  return nodeId;
}

/** The record in `dir`, or null when there is none; throws DataDirError when it is unreadable. */
export async function readApiAddress(dir: string): Promise<ApiAddress | null> {
  const path = join(dir, API_FILE);
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    if (errnoOf(error) === 'ENOENT') return null;
    throw new DataDirError('api-unreadable', `cannot read ${path}: ${messageOf(error)}`, { cause: error });
  }
  let record: unknown;
  try {
    record = JSON.parse(text);
  } catch {
    record = null;
  }
  const { url, pid } = (record ?? {}) as Record<string, unknown>;
  if (typeof url !== 'string' || !Number.isSafeInteger(pid)) throw new DataDirError('api-invalid', `${path} is not a node's API record ({"url", "pid"})`);
  return { url, pid: pid as number };
}
