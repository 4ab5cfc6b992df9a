/**
 * Passphrase-sealed identity backups, the one format `mesh identity backup` and the wallet page
 * write. The file is the identity file's JSON with version 2: the `node_id` stays readable (a user
 * can tell which key a backup holds) and the seed is in `sealed`, lowercase hex of
 *
 *   format 0x01 ‖ memory KiB u32 ‖ iterations u32 ‖ parallelism u8 ‖ salt 16 ‖ nonce 12 ‖ AES-256-GCM(seed) 48
 *
 * The key is Argon2id(passphrase, salt) with the parameters written in the file (RFC 9106 §4, the
 * second recommended option: 64 MiB, 3 passes, 4 lanes; about half a second in Node and Chromium).
 * Everything before the ciphertext and the node_id are authenticated as GCM's additional data, so
 * neither the parameters nor the stated node_id can be changed without the passphrase failing.
 */
import { argon2id } from 'hash-wasm';
import { concatBytes as concat } from '../encoding/bytes.ts';
import { fromHex, toHex } from '../encoding/hex.ts';
import { SigningKey } from './ed25519.ts';
import { IdentityFileError, identityFileText, MAX_IDENTITY_BYTES, parseIdentityFile } from './identity-file.ts';
import { type Random, systemRandom } from './random.ts';

/** The Argon2id cost of a backup: memory in KiB, passes, lanes. */
export interface BackupKdf {
  readonly memoryKib: number;
  readonly iterations: number;
  readonly parallelism: number;
}

/** RFC 9106 §4, second recommended option. */
export const BACKUP_KDF: BackupKdf = { memoryKib: 64 * 1024, iterations: 3, parallelism: 4 };

/** The shortest passphrase a backup takes. */
export const MIN_PASSPHRASE_LENGTH = 8;

// Bounds on what a file may ask of the reader's machine, so a crafted backup cannot take 4 GiB.
const MAX_MEMORY_KIB = 1024 * 1024;
const MAX_ITERATIONS = 64;
const MAX_PARALLELISM = 16;

const FORMAT = 1;
const SALT = 16;
const NONCE = 12;
const HEADER = 1 + 4 + 4 + 1 + SALT + NONCE;
const SEALED = HEADER + 32 + 16;
const TYPE = 'mesh-identity';
const VERSION = 2;

/** Whether a backup text needs a passphrase (version 2) or holds its seed in the clear (version 1). */
export function isSealedBackup(text: string): boolean {
  try {
    const file = JSON.parse(text) as { version?: unknown };
    return typeof file === 'object' && file !== null && file.version === VERSION;
  } catch {
    return false;
  }
}

/** Refuses a passphrase too short to protect a key; the message is for the person typing it. */
export function checkPassphrase(passphrase: string): void {
  if ([...passphrase.normalize('NFC')].length < MIN_PASSPHRASE_LENGTH) {
    throw new IdentityFileError('identity-passphrase', `a backup passphrase has at least ${MIN_PASSPHRASE_LENGTH} characters`);
  }
}

/** The sealed backup of `key` under `passphrase`. */
export async function sealIdentity(key: SigningKey, passphrase: string, options: { random?: Random; kdf?: BackupKdf } = {}): Promise<string> {
  checkPassphrase(passphrase);
  const kdf = options.kdf ?? BACKUP_KDF;
  const random = options.random ?? systemRandom;
  const header = new Uint8Array(HEADER);
  const view = new DataView(header.buffer);
  header[0] = FORMAT;
  view.setUint32(1, kdf.memoryKib);
  view.setUint32(5, kdf.iterations);
  header[9] = kdf.parallelism;
  header.set(random.bytes(SALT), 10);
  header.set(random.bytes(NONCE), 10 + SALT);
  const nodeId = key.publicKey;
  const aesKey = await deriveKey(passphrase, header, kdf);
  const sealed = new Uint8Array(await crypto.subtle.encrypt(gcm(header, nodeId), aesKey, key.exportSeed() as BufferSource));
  const file = { type: TYPE, version: VERSION, node_id: toHex(nodeId), sealed: toHex(concat(header, sealed)) };
  return `${JSON.stringify(file, null, 2)}\n`;
}

/**
 * The key of a backup: a sealed one opened with `passphrase`, or a version 1 file in the clear.
 * IdentityFileError with code `identity-passphrase` when the passphrase is missing or wrong.
 */
export async function openIdentity(text: string, passphrase?: string): Promise<SigningKey> {
  if (!isSealedBackup(text)) return parseIdentityFile(text);
  const fail = (code: string, why: string): never => {
    throw new IdentityFileError(code, why);
  };
  if (text.length > MAX_IDENTITY_BYTES) return fail('identity-json', 'it is too large to be a mesh identity');
  const file = JSON.parse(text) as Record<string, unknown>;
  if (file.type !== TYPE) fail('identity-type', `type is ${JSON.stringify(file.type)}, expected "${TYPE}"`);
  let nodeId: Uint8Array;
  let bytes: Uint8Array;
  try {
    nodeId = fromHex(file.node_id as string, 32, 'node_id');
    bytes = fromHex(file.sealed as string, SEALED, 'sealed');
  } catch (error) {
    return fail('identity-hex', error instanceof Error ? error.message : String(error));
  }
  if (bytes[0] !== FORMAT) return fail('identity-sealed', `its sealed seed is format ${bytes[0]}, this build reads format ${FORMAT}`);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const kdf: BackupKdf = { memoryKib: view.getUint32(1), iterations: view.getUint32(5), parallelism: bytes[9]! };
  if (
    kdf.parallelism < 1 ||
    kdf.parallelism > MAX_PARALLELISM ||
    kdf.iterations < 1 ||
    kdf.iterations > MAX_ITERATIONS ||
    kdf.memoryKib < 8 * kdf.parallelism ||
    kdf.memoryKib > MAX_MEMORY_KIB
  ) {
    return fail(
      'identity-sealed',
      `its key derivation asks for ${kdf.memoryKib} KiB, ${kdf.iterations} passes and ${kdf.parallelism} lanes, outside what this build reads`,
    );
  }
  if (passphrase === undefined || passphrase === '') return fail('identity-passphrase', 'the backup is sealed: it needs its passphrase');
  const header = bytes.subarray(0, HEADER);
  const aesKey = await deriveKey(passphrase, header, kdf);
  let seed: Uint8Array;
  try {
    seed = new Uint8Array(await crypto.subtle.decrypt(gcm(header, nodeId), aesKey, bytes.subarray(HEADER) as BufferSource));
  } catch {
    return fail('identity-passphrase', 'the passphrase does not open this backup (or the file was changed)');
  }
  const key = SigningKey.fromSeed(seed);
  if (toHex(key.publicKey) !== toHex(nodeId)) fail('identity-mismatch', `its seed derives node_id ${toHex(key.publicKey)}, not the one it states`);
  return key;
}

/** A version 1 backup: the seed in the clear (only behind an explicit choice). */
export const plainIdentityText = identityFileText;

// The nonce is in the header; the header and the stated node_id are authenticated with the seed.
function gcm(header: Uint8Array, nodeId: Uint8Array): AesGcmParams {
  return { name: 'AES-GCM', iv: header.slice(10 + SALT, HEADER), additionalData: concat(header.subarray(0, HEADER), nodeId) as BufferSource };
}

async function deriveKey(passphrase: string, header: Uint8Array, kdf: BackupKdf): Promise<CryptoKey> {
  const raw = await argon2id({
    password: passphrase.normalize('NFC'),
    salt: header.slice(10, 10 + SALT),
    parallelism: kdf.parallelism,
    iterations: kdf.iterations,
    memorySize: kdf.memoryKib,
    hashLength: 32,
    outputType: 'binary',
  });
  return crypto.subtle.importKey('raw', raw as BufferSource, 'AES-GCM', false, ['encrypt', 'decrypt']);
}
