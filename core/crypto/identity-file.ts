/**
 * The identity file: a node's or a wallet's key as `{ type, version, node_id, seed }` JSON with
 * lowercase 64-hex values. `mesh identity backup` writes it and the wallet page exports it, so a
 * key moves between the two.
 */

import { fromHex, toHex } from '../encoding/hex.ts';
import { MeshError } from '../errors.ts';
import { SigningKey } from './ed25519.ts';

const IDENTITY_TYPE = 'mesh-identity';
const IDENTITY_VERSION = 1;
/** An identity file is under 200 bytes; anything far larger is not one. */
export const MAX_IDENTITY_BYTES = 64 * 1024;

/** A text that is not a valid identity file; `code` says which part (identity-json, -type, -version, -hex, -mismatch). */
export class IdentityFileError extends MeshError {}

/** The identity file of `key`. */
export function identityFileText(key: SigningKey): string {
  const file = { type: IDENTITY_TYPE, version: IDENTITY_VERSION, node_id: toHex(key.publicKey), seed: toHex(key.exportSeed()) };
  return `${JSON.stringify(file, null, 2)}\n`;
}

/** The key of an identity file, fully checked (type, version, hex lengths, seed derives node_id). */
export function parseIdentityFile(text: string): SigningKey {
  const fail = (code: string, why: string): never => {
    throw new IdentityFileError(code, why);
  };
  if (text.length > MAX_IDENTITY_BYTES) return fail('identity-json', 'it is too large to be a mesh identity');
  let file: unknown;
  try {
    file = JSON.parse(text);
  } catch {
    return fail('identity-json', 'it is not JSON');
  }
  if (typeof file !== 'object' || file === null || Array.isArray(file)) return fail('identity-json', 'it is not a JSON object');
  const { type, version, node_id: nodeId, seed } = file as Record<string, unknown>;
  if (type !== IDENTITY_TYPE) fail('identity-type', `type is ${JSON.stringify(type)}, expected "${IDENTITY_TYPE}"`);
  if (version !== IDENTITY_VERSION) fail('identity-version', `version is ${JSON.stringify(version)}, this build reads version ${IDENTITY_VERSION}`);
  let seedBytes: Uint8Array;
  let nodeIdBytes: Uint8Array;
  try {
    nodeIdBytes = fromHex(nodeId as string, 32, 'node_id');
    seedBytes = fromHex(seed as string, 32, 'seed');
  } catch (error) {
    return fail('identity-hex', error instanceof Error ? error.message : String(error));
  }
  const key = SigningKey.fromSeed(seedBytes);
  if (toHex(key.publicKey) !== toHex(nodeIdBytes)) {
    fail('identity-mismatch', `its seed derives node_id ${toHex(key.publicKey)}, not the ${nodeId as string} it states`);
  }
  return key;
}
