/**
 * Signals, protocol v1 (node-api.md §2 "Signal"): a short signed message from one node to all
 * (`broadcast`) or to one node, carrying capabilities and an optional payload paid for by a burn.
 *
 * Wire form: body ‖ signature, where body is the canonical encoding (docs/encoding.md) of
 * version (u8, 1) ‖ from ‖ to (option: none = broadcast) ‖ capabilities ‖ payload ‖ burn proof
 * (option) ‖ nonce, and the signature is the sender's Ed25519 signature over
 * `"mesh/signal/1" 0x00 network 0x00 ‖ body`. id = SHA-256 of the wire form. docs/signals.md.
 */

import { checkSignature, SIGNATURE_LENGTH, type SigningKey } from '../crypto/ed25519.ts';
import { sha256 } from '../crypto/sha256.ts';
import { formatAmount } from '../encoding/amount.ts';
import { bytesEqual, concatBytes } from '../encoding/bytes.ts';
import { array, bytes32, decode, encode, type Infer, option, struct, u8, u32, u128, uint53, utf8, varBytes } from '../encoding/codec.ts';
import { toHex } from '../encoding/hex.ts';
import { MeshError } from '../errors.ts';
import { domainBytes } from '../ledger/domain.ts';
import { SignalError } from './errors.ts';
import type { SignalObject } from './types.ts';

/** The protocol version written into every signal (node-api.md §9: signal protocol 1). */
export const SIGNAL_VERSION = 1;
/** Most capabilities one signal carries. */
export const MAX_CAPABILITIES = 64;
/** Longest capability name, in UTF-8 bytes. */
export const MAX_CAPABILITY_NAME_BYTES = 64;
/** Largest payload, in bytes (16 KiB). */
export const MAX_PAYLOAD_BYTES = 16 * 1024;

const capabilityCodec = struct({ name: utf8(MAX_CAPABILITY_NAME_BYTES), version: u32 }, 'capability');
const burnProofCodec = struct({ tx_id: bytes32, amount: u128, block_height: uint53, block_hash: bytes32 }, 'burn proof');
const signalBodyCodec = struct(
  {
    version: u8,
    from: bytes32,
    to: option(bytes32),
    capabilities: array(capabilityCodec, MAX_CAPABILITIES),
    payload: varBytes(MAX_PAYLOAD_BYTES),
    burn_proof: option(burnProofCodec),
    nonce: uint53,
  },
  'signal',
);

/** One capability: a name (1–64 UTF-8 bytes, unique within a signal) and a version (u32). */
export type Capability = Infer<typeof capabilityCodec>;

/** Names a confirmed transaction whose burn, paid by the signal's sender, backs the signal. */
export type BurnProof = Infer<typeof burnProofCodec>;

/** What a sender fills in; `from` defaults to the signing key's public key. */
export interface SignalFields {
  readonly from?: Uint8Array;
  readonly to: 'broadcast' | Uint8Array;
  readonly capabilities: readonly Capability[];
  readonly payload: Uint8Array;
  readonly burn_proof: BurnProof | null;
  readonly nonce: number;
}

/** A decoded, signed signal with its wire bytes and id. */
export interface SignedSignal {
  readonly from: Uint8Array;
  readonly to: 'broadcast' | Uint8Array;
  readonly capabilities: readonly Capability[];
  readonly payload: Uint8Array;
  readonly burn_proof: BurnProof | null;
  readonly nonce: number;
  readonly signature: Uint8Array;
  /** The encoded body: what the signature covers, after the domain tag. */
  readonly bodyBytes: Uint8Array;
  /** body ‖ signature, as gossiped on `mesh-protocol-1`. */
  readonly bytes: Uint8Array;
  /** SHA-256 of `bytes`: the signal's content address. */
  readonly id: Uint8Array;
}

// The largest body: every field at its bound.
const MAX_BODY_BYTES = 1 + 32 + (1 + 32) + 4 + MAX_CAPABILITIES * (4 + MAX_CAPABILITY_NAME_BYTES + 4) + 4 + MAX_PAYLOAD_BYTES + (1 + 32 + 16 + 8 + 32) + 8;
/** The largest signal's wire size: gossip may drop anything longer unread. */
export const MAX_SIGNAL_BYTES: number = MAX_BODY_BYTES + SIGNATURE_LENGTH;

/** What the sender signs. */
export function signalSigningBytes(network: string, bodyBytes: Uint8Array): Uint8Array {
  return domainBytes('mesh/signal/1', network, bodyBytes);
}

// Rules the codec cannot state: a capability name is not empty and appears once.
function checkCapabilities(capabilities: readonly Capability[]): void {
  const seen = new Set<string>();
  for (const { name } of capabilities) {
    if (name.length === 0) throw new SignalError('bad-encoding', 'a capability name is empty');
    if (seen.has(name)) throw new SignalError('bad-encoding', `capability ${JSON.stringify(name)} appears twice`);
    seen.add(name);
  }
}

function build(body: Infer<typeof signalBodyCodec>, bodyBytes: Uint8Array, signature: Uint8Array): SignedSignal {
  const bytes = concatBytes(bodyBytes, signature);
  return {
    from: body.from,
    to: body.to ?? 'broadcast',
    capabilities: body.capabilities,
    payload: body.payload,
    burn_proof: body.burn_proof,
    nonce: body.nonce,
    signature,
    bodyBytes,
    bytes,
    id: sha256(bytes),
  };
}

function asSignalError(error: unknown): unknown {
  if (error instanceof SignalError || !(error instanceof MeshError)) return error;
  return new SignalError('bad-encoding', error.message);
}

/**
 * Signs a signal from `key` for `network`. Throws SignalError 'bad-encoding' when a field breaks a
 * bound (too many capabilities, a long or duplicate name, a payload over 16 KiB, an unsafe nonce)
 * or `fields.from` is not the key's.
 */
export async function signSignal(fields: SignalFields, key: SigningKey, network: string): Promise<SignedSignal> {
  const from = fields.from ?? key.publicKey;
  if (!(from instanceof Uint8Array) || !bytesEqual(from, key.publicKey)) {
    throw new SignalError('bad-encoding', "a signal's from must be the signing key's public key");
  }
  let bodyBytes: Uint8Array;
  try {
    checkCapabilities(fields.capabilities);
    bodyBytes = encode(signalBodyCodec, {
      version: SIGNAL_VERSION,
      from,
      to: fields.to === 'broadcast' ? null : fields.to,
      capabilities: fields.capabilities.map(({ name, version }) => ({ name, version })),
      payload: fields.payload,
      burn_proof: fields.burn_proof === null ? null : { ...fields.burn_proof },
      nonce: fields.nonce,
    });
  } catch (error) {
    throw asSignalError(error);
  }
  const signature = await key.sign(signalSigningBytes(network, bodyBytes));
  return build(decode(signalBodyCodec, bodyBytes), bodyBytes, signature);
}

/**
 * Decodes a signal from its wire form, checking structure only (not the signature, nonce or burn:
 * see verifySignalSignature and SignalBook). Throws SignalError 'bad-encoding' for anything that is
 * not the canonical encoding of a v1 signal. `network` is unused by the structure and kept so
 * callers name the network they decode for, as they do when they verify.
 */
export function decodeSignal(bytes: Uint8Array, _network: string): SignedSignal {
  if (!(bytes instanceof Uint8Array)) throw new SignalError('bad-encoding', 'a signal must be given as bytes');
  if (bytes.length > MAX_SIGNAL_BYTES) {
    throw new SignalError('bad-encoding', `signal is ${bytes.length} bytes, more than ${MAX_SIGNAL_BYTES}`);
  }
  if (bytes.length < SIGNATURE_LENGTH + 1) {
    throw new SignalError('bad-encoding', `signal is ${bytes.length} bytes, too short to hold a signature`);
  }
  // The version byte comes first, so a later protocol's signal is named as such, not as garbage.
  if (bytes[0] !== SIGNAL_VERSION) {
    throw new SignalError('bad-encoding', `signal protocol version ${bytes[0]} is not ${SIGNAL_VERSION}`);
  }
  const bodyBytes = bytes.slice(0, bytes.length - SIGNATURE_LENGTH);
  let body: Infer<typeof signalBodyCodec>;
  try {
    body = decode(signalBodyCodec, bodyBytes);
    checkCapabilities(body.capabilities);
  } catch (error) {
    throw asSignalError(error);
  }
  return build(body, bodyBytes, bytes.slice(bytes.length - SIGNATURE_LENGTH));
}

/** Checks the sender's signature over the signal's body; throws SignalError 'bad-signature'. */
export async function verifySignalSignature(signal: SignedSignal, network: string): Promise<void> {
  const problem = await checkSignature(signal.from, signalSigningBytes(network, signal.bodyBytes), signal.signature);
  if (problem !== null) {
    throw new SignalError('bad-signature', `signal ${toHex(signal.id).slice(0, 16)}… is not signed by its sender (${problem})`);
  }
}

/** The API form of a signal (node-api.md §2): hex ids, the amount as a decimal string. */
export function signalObject(signal: SignedSignal): SignalObject {
  const proof = signal.burn_proof;
  return {
    from: toHex(signal.from),
    to: signal.to === 'broadcast' ? 'broadcast' : toHex(signal.to),
    capabilities: signal.capabilities.map(({ name, version }) => ({ name, version })),
    payload_hex: toHex(signal.payload),
    ...(proof === null
      ? {}
      : {
          burn_proof: {
            tx_id: toHex(proof.tx_id),
            amount: formatAmount(proof.amount),
            block_height: proof.block_height,
            block_hash: toHex(proof.block_hash),
          },
        }),
    nonce: signal.nonce,
    id: toHex(signal.id),
  };
}
